package unherdredis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/fleet/fleettest"
	"github.com/unherd/unherd/unherdredis"
)

// uniquePrefix is a key prefix no other test run uses.
func uniquePrefix(t testing.TB) string {
	return fmt.Sprintf("unherd:test:%s:%d:", t.Name(), time.Now().UnixNano())
}

// 50 processes with skewed traffic share one budget on the Redis: the
// fleet retries within 10% of its bound (see fleettest.CheckShare).
func TestFleetShare(t *testing.T) {
	runShare(t, newClient(t))
}

func runShare(t *testing.T, c redis.UniversalClient) {
	prefix := uniquePrefix(t)
	var ledgers []*unherdredis.Ledger
	r := fleettest.Share(t, 50, 2*time.Second, fleettest.Config(), func(int) fleet.Transport {
		l, err := unherdredis.NewLedger(c, "share", prefix)
		if err != nil {
			t.Fatal(err)
		}
		ledgers = append(ledgers, l)
		return l
	})
	for _, l := range ledgers {
		_ = l.Close()
	}
	fleettest.CheckShare(t, r)
	keys, err := c.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// One window and one lease record per process, all in one slot.
	if len(keys) != 51 {
		t.Errorf("%d keys under %s, want 51", len(keys), prefix)
	}
}
