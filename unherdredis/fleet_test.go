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

// The Lua ledger and fleet.Ledger agree, report by report: requests
// booked once though a report is sent again, returned leases un-booked,
// spent retries booked, grants capped by the window. The slot is an hour long, so that the
// sequence (milliseconds long) falls in one slot of the Redis clock.
func TestLedgerMatchesMemory(t *testing.T) {
	c := newClient(t)
	prefix := uniquePrefix(t)
	l, err := unherdredis.NewLedger(c, "parity", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keys, _ := c.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(context.Background(), keys...)
		}
	})
	lim := fleet.Limits{Ratio: 0.1, Reserve: 5, Slot: time.Hour, Slots: 20}
	mem := fleet.NewLedger(nil)
	for i, r := range []fleet.Report{
		{ID: "a", Requests: 100, Delta: 100, Want: 50},
		{ID: "a", Requests: 100, Delta: 100, Returned: 15, Want: 50},
		{ID: "b", Want: 5},
		{ID: "b", Requests: 200, Delta: 200, Want: 5},
		{ID: "a", Requests: 150, Delta: 50, Returned: 3, Want: 1000},
		{ID: "c", Requests: 7, Delta: 7, Want: 0},
		// Retries made from a fallback are booked before the grant.
		{ID: "d", Requests: 40, Delta: 40, Spent: 9, Want: 20},
		// Spread over three slots, with remainders in the current one.
		{ID: "e", Requests: 91, Delta: 91, Spent: 13, Span: 3 * time.Hour, Want: 100},
	} {
		r.Limits = lim
		got, err := l.Sync(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if want := mem.SyncAt(time.Now(), r); got != want {
			t.Errorf("report %d %+v: Redis granted %+v, memory %+v", i, r, got, want)
		}
	}
}
