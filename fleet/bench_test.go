package fleet_test

import (
	"context"
	"testing"

	"github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/fleet/fleettest"
	"github.com/unherd/unherd/internal/await"
)

// BenchmarkBudgetParallel is the hot path over the in-memory ledger, with
// Run syncing in the background: 19 calls in 20 succeed at once; the 20th
// fails, withdraws a retry and, if allowed, succeeds on it. One op is one
// call. unherdredis's BenchmarkFleetBudgetParallel is the same over Redis.
func BenchmarkBudgetParallel(b *testing.B) {
	bud, err := fleet.New(fleet.Config{MaxLease: 1 << 40}, fleet.NewLedger(nil))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_ = bud.Sync(ctx)
	done := make(chan struct{})
	go func() { bud.Run(ctx); close(done) }()
	defer func() { cancel(); await.Recv(b, done, "the budget's sync loop to stop") }()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) { fleettest.Traffic(bud, pb) })
}
