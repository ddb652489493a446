package unherdredis_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/fleet/fleettest"
	"github.com/unherd/unherd/unherdredis"
)

// BenchmarkFleetBudgetParallel is the fleet budget's hot path on the
// shared Redis: 19 calls in 20 succeed at once; the 20th fails,
// withdraws a retry and, if allowed, succeeds on it (half the default
// ratio of 10%, so that the budget is not what refuses retries once the
// window has filled). One op is one call. It reports the Redis
// round trips (syncs) per 10,000 calls and the share of retries refused.
// The configuration is the default but for MaxLease: one process making
// tens of millions of calls a second would be refused most retries by
// the default cap of 10,000 tokens per sync (at most ten syncs a second).
func BenchmarkFleetBudgetParallel(b *testing.B) {
	c := newClient(b)
	bud, err := unherdredis.NewBudget(c, "bench", unherdredis.BudgetConfig{Prefix: uniquePrefix(b), Config: fleet.Config{MaxLease: 1 << 40}})
	if err != nil {
		b.Fatal(err)
	}
	defer bud.Close()
	for bud.State() != fleet.Shared {
		time.Sleep(time.Millisecond) // the first sync, on a real server
	}
	before := bud.Stats().Syncs
	var retries, refused atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		yes, no := fleettest.Traffic(bud, pb)
		retries.Add(yes)
		refused.Add(no)
	})
	b.StopTimer()
	b.ReportMetric(float64(bud.Stats().Syncs-before)*1e4/float64(b.N), "roundtrips/10kcalls")
	if n := retries.Load() + refused.Load(); n > 0 {
		b.ReportMetric(float64(refused.Load())/float64(n), "refused/retry")
	}
}
