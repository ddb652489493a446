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

// The fleet budget's suite on a 3-node Redis Cluster started on loopback
// ports: the share of 50 processes, the keys of a budget in one slot, and
// a fallback and recovery while the node holding that slot refuses
// writes (CLIENT PAUSE WRITE, which holds back the sync's script).
func TestFleetCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three redis-server processes")
	}
	addrs := startCluster(t)
	newCluster := func() *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 16,
			DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	t.Run("Share", func(t *testing.T) { runShare(t, newCluster()) })
	t.Run("OneSlot", func(t *testing.T) {
		c := newCluster()
		b, err := unherdredis.NewBudget(c, "slots", unherdredis.BudgetConfig{Prefix: uniquePrefix(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		w, l := b.Keys()
		ctx := context.Background()
		sw, err1 := c.ClusterKeySlot(ctx, w).Result()
		sl, err2 := c.ClusterKeySlot(ctx, l).Result()
		if err1 != nil || err2 != nil || sw != sl {
			t.Errorf("window %s in slot %d (%v), lease %s in slot %d (%v)", w, sw, err1, l, sl, err2)
		}
	})
	t.Run("Outage", func(t *testing.T) {
		c := newCluster()
		// The node that holds the budget's slot, found after the budget
		// is open, paused and unpaused through a client of its own.
		var node *redis.Client
		cut := func() {
			w, err := keysOf(t, c)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
				if n, err := m.Exists(ctx, w).Result(); err == nil && n == 1 {
					node = redis.NewClient(&redis.Options{Addr: m.Options().Addr})
				}
				return nil
			}); err != nil || node == nil {
				t.Fatalf("no node holds the window key %s: %v", w, err)
			}
			if err := node.Do(context.Background(), "CLIENT", "PAUSE", 10000, "WRITE").Err(); err != nil {
				t.Fatal(err)
			}
		}
		heal := func() {
			if err := node.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
				t.Error(err)
			}
			_ = node.Close()
		}
		outage(t, c, cut, heal)
	})
}

// keysOf returns the window key of the budget the Outage test opened:
// the only one under its prefix.
func keysOf(t *testing.T, c *redis.ClusterClient) (string, error) {
	t.Helper()
	var found string
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "unherd:test:"+t.Name()+"*:w").Result()
		if len(keys) > 0 {
			found = keys[0]
		}
		return err
	})
	return found, err
}
