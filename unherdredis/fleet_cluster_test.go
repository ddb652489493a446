package unherdredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/unherdredis"
)

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
