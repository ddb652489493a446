package hedge

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/lognormal"
	"github.com/unherd/unherd/retry/engine"
)

// BenchmarkHedgePrimaryWins measures the path almost every call takes: a
// request context the caller can cancel, a fixed delay, the default
// budget, and a primary that answers at once.
func BenchmarkHedgePrimaryWins(b *testing.B) {
	benchPrimaryWins(b, mustNew(b, Config{Delay: 10 * time.Millisecond}), answer)
}

// BenchmarkHedgePrimaryWinsAdaptive is the same with the default
// adaptive delay, warmed up: each call also measures its latency.
func BenchmarkHedgePrimaryWinsAdaptive(b *testing.B) {
	benchPrimaryWins(b, warmAt10ms(b), answer)
}

// BenchmarkHedgePrimaryWinsParallel is BenchmarkHedgePrimaryWins from
// every core on one Hedger.
func BenchmarkHedgePrimaryWinsParallel(b *testing.B) {
	b.ReportAllocs()
	h := warmAt10ms(b)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if v, err := Do(ctx, h, answer, nil); v != 1 || err != nil {
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
	benchPrimaryWins(b, mustNew(b, Config{Delay: 10 * time.Millisecond}), func(ctx context.Context, _ int) (int, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
			return 1, nil
		}
	})
}

// answer is a primary that answers 1 at once.
func answer(context.Context, int) (int, error) { return 1, nil }

// warmAt10ms returns a default Hedger that has observed 1000 latencies of
// 10 ms, enough to hedge.
func warmAt10ms(b *testing.B) *Hedger {
	h := mustNew(b, Config{})
	for range 1000 {
		h.Observe(10 * time.Millisecond)
	}
	if _, ok := h.Begin(); !ok {
		b.Fatal("hedging not enabled after warm-up")
	}
	return h
}

// benchPrimaryWins measures Do on h with a primary, fn, that answers 1
// before the delay, under a context the caller can cancel.
func benchPrimaryWins(b *testing.B, h *Hedger, fn func(context.Context, int) (int, error)) {
	b.ReportAllocs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for b.Loop() {
		if v, err := Do(ctx, h, fn, nil); v != 1 || err != nil {
			b.Fatal(v, err)
		}
	}
}

// warmHedger returns a default Hedger that has observed 1024 latencies,
// enough to hedge, and those latencies.
func warmHedger(b *testing.B) (*Hedger, []time.Duration) {
	h := mustNew(b, Config{})
	lat := lognormal.Sample(1024, 10*time.Millisecond, 0.5)
	for _, d := range lat {
		h.Observe(d)
	}
	if _, ok := h.Begin(); !ok {
		b.Fatal("hedging not enabled after warm-up")
	}
	return h, lat
}

// BenchmarkHedgerRequest is the decision path of one successful request
// on the default Hedger (adaptive delay, default ratio budget), warmed up,
// as the simulator drives it for every key: Begin, Observe, End(nil).
func BenchmarkHedgerRequest(b *testing.B) {
	b.ReportAllocs()
	h, lat := warmHedger(b)
	i := 0
	for b.Loop() {
		request(h, lat[i&1023])
		i++
	}
}

// BenchmarkHedgerRequestParallel is BenchmarkHedgerRequest from every
// core on one Hedger.
func BenchmarkHedgerRequestParallel(b *testing.B) {
	b.ReportAllocs()
	h, lat := warmHedger(b)
	var seed atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(1)) * 97
		for pb.Next() {
			request(h, lat[i&1023])
			i++
		}
	})
}

// request is the decision path of one successful request of the given
// latency, with its books.
func request(h *Hedger, latency time.Duration) {
	r, _ := engine.AdmitRequest(context.Background(), h.Policy(), false)
	h.Begin()
	h.Observe(latency)
	r.End(nil)
}
