package hedge

import (
	"context"
	"testing"
	"time"
)

// BenchmarkHedgePrimaryWins measures a call whose primary answers at
// once, with the default adaptive delay already warmed up and the default
// budget: the path almost every call takes.
func BenchmarkHedgePrimaryWins(b *testing.B) {
	b.ReportAllocs()
	h := mustNew(b, Config{})
	for i := 0; i < 1000; i++ {
		h.Observe(10 * time.Millisecond)
	}
	if _, ok := h.Begin(); !ok {
		b.Fatal("hedging not enabled after warm-up")
	}
	ctx := context.Background()
	fn := func(context.Context, int) (int, error) { return 1, nil }
	for b.Loop() {
		if v, err := Do(ctx, h, fn, nil); v != 1 || err != nil {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkHedgePrimaryWinsFixed is the same with a fixed delay: no
// latency is measured, so no clock is read.
func BenchmarkHedgePrimaryWinsFixed(b *testing.B) {
	b.ReportAllocs()
	h := mustNew(b, Config{Delay: 10 * time.Millisecond})
	ctx := context.Background()
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
