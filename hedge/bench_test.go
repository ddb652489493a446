package hedge

import (
	"context"
	"testing"
	"time"
)

// BenchmarkHedgePrimaryWins measures the path almost every call takes: a
// request context the caller can cancel, a fixed delay, the default
// budget, and a primary that answers at once.
func BenchmarkHedgePrimaryWins(b *testing.B) {
	b.ReportAllocs()
	h := mustNew(b, Config{Delay: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fn := func(context.Context, int) (int, error) { return 1, nil }
	for b.Loop() {
		if v, err := Do(ctx, h, fn, nil); v != 1 || err != nil {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkHedgePrimaryWinsAdaptive is the same with the default
// adaptive delay, warmed up: each call also measures its latency.
func BenchmarkHedgePrimaryWinsAdaptive(b *testing.B) {
	b.ReportAllocs()
	h := mustNew(b, Config{})
	for i := 0; i < 1000; i++ {
		h.Observe(10 * time.Millisecond)
	}
	if _, ok := h.Begin(); !ok {
		b.Fatal("hedging not enabled after warm-up")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fn := func(context.Context, int) (int, error) { return 1, nil }
	for b.Loop() {
		if v, err := Do(ctx, h, fn, nil); v != 1 || err != nil {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkHedgePrimaryWinsParallel is BenchmarkHedgePrimaryWins from
// every core on one Hedger.
func BenchmarkHedgePrimaryWinsParallel(b *testing.B) {
	b.ReportAllocs()
	h := mustNew(b, Config{})
	for i := 0; i < 1000; i++ {
		h.Observe(10 * time.Millisecond)
	}
	ctx := context.Background()
	fn := func(context.Context, int) (int, error) { return 1, nil }
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if v, err := Do(ctx, h, fn, nil); v != 1 || err != nil {
				b.Error(v, err)
				return
			}
		}
	})
}

// BenchmarkHedgePrimaryWinsWatched is BenchmarkHedgePrimaryWins with a
// primary that reads its context's Done channel once before answering,
// as one that does I/O does, which sets up the context's cancellation.
func BenchmarkHedgePrimaryWinsWatched(b *testing.B) {
	b.ReportAllocs()
	h := mustNew(b, Config{Delay: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fn := func(ctx context.Context, _ int) (int, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
			return 1, nil
		}
	}
	for b.Loop() {
		if v, err := Do(ctx, h, fn, nil); v != 1 || err != nil {
			b.Fatal(v, err)
		}
	}
}
