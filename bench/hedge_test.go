package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/hedge"
)

// The hedging scenario: the primary replica of one call in slowEvery is
// slow (slowFor, or until its attempt is cancelled); every other primary
// and every hedge answers at once. Both libraries hedge once, after
// hedgeAfter. The replicas are in-process: no network, and every wait
// ends when its attempt is cancelled.
const (
	slowEvery  = 25
	slowFor    = 5 * time.Millisecond
	hedgeAfter = 1 * time.Millisecond
)

// replicas serves the attempts of the hedging scenario and counts them.
// The k-th primary belongs to the k-th call (the calls are serial), so
// whether a primary is slow depends on its own count and on nothing the
// next call could change.
type replicas struct {
	primaries atomic.Int64
	hedges    atomic.Int64
}

func (r *replicas) attempt(ctx context.Context, attempt int) (int, error) {
	if attempt > 0 {
		r.hedges.Add(1)
		return want, nil
	}
	if r.primaries.Add(1)%slowEvery == 1 {
		t := time.NewTimer(slowFor)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
	return want, nil
}

// newHedger is unherd's side of the comparison: a fixed delay and one
// hedge, as failsafe-go has; no hedge budget, as failsafe-go has none by
// default.
func newHedger(b *testing.B) *hedge.Hedger {
	h, err := hedge.New(hedge.Config{Delay: hedgeAfter, MaxHedges: 1, Budget: budget.Unlimited})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// failsafeAttempt adapts an attempt function to failsafe-go's: the
// primary is attempt 0 and its hedge attempt 1.
func failsafeAttempt(f func(context.Context, int) (int, error)) func(failsafe.Execution[int]) (int, error) {
	return func(e failsafe.Execution[int]) (int, error) {
		attempt := 0
		if e.IsHedge() {
			attempt = 1
		}
		return f(e.Context(), attempt)
	}
}

// isSlow reports whether call i (from 0) has the slow primary.
func isSlow(i int) bool { return i%slowEvery == 0 }

// check fails the benchmark unless every call made one primary, at most
// one hedge was made per call, and (when hedged says the case hedges) the
// slow calls were hedged. It allows up to half of the slow calls to go
// unhedged: on a loaded machine the process can be descheduled past the
// 4 ms between the hedge delay and the slow primary's answer, and a
// library that does not hedge at all still fails. It reports the extra
// requests per call (hedges) and the mean latency of the slow calls.
func (r *replicas) check(b *testing.B, hedged bool, slowTotal time.Duration) {
	b.Helper()
	n, h := r.primaries.Load(), r.hedges.Load()
	slow := int64((b.N + slowEvery - 1) / slowEvery)
	if n != int64(b.N) {
		b.Fatalf("%d primaries for %d calls, want one each", n, b.N)
	}
	if hedged && (2*h < slow || h > n) {
		b.Fatalf("%d hedges for %d calls of which %d slow, want about one per slow call and at most one per call", h, b.N, slow)
	}
	if !hedged && h != 0 {
		b.Fatalf("%d hedges without hedging", h)
	}
	b.ReportMetric(float64(h)/float64(b.N), extraUnit)
	b.ReportMetric(float64(slowTotal.Microseconds())/float64(slow), "slow-call-µs")
}

// extraUnit is the unit of the extra-requests metric.
const extraUnit = "extra-req/op"

// BenchmarkHedge is a stream of calls one in 25 of whose primaries is slow
// (5 ms), hedged once after 1 ms: the mean latency per call (ns/op), the
// mean latency of the slow calls (slow-call-µs) and the extra requests per
// call (extra-req/op). floor-nohedge is the same calls unhedged.
func BenchmarkHedge(b *testing.B) {
	ctx := reqCtx(b)

	// run makes the calls with do, timing the slow ones.
	run := func(b *testing.B, do func() (int, error)) time.Duration {
		var slowTotal time.Duration
		i := 0
		for b.Loop() {
			var start time.Time
			if isSlow(i) {
				start = time.Now()
			}
			v, err := do()
			if isSlow(i) {
				slowTotal += time.Since(start)
			}
			checkResult(b, v, err)
			i++
		}
		return slowTotal
	}

	b.Run("floor-nohedge", func(b *testing.B) {
		b.ReportAllocs()
		var r replicas
		slow := run(b, func() (int, error) { return r.attempt(ctx, 0) })
		r.check(b, false, slow)
	})

	b.Run("unherd", func(b *testing.B) {
		b.ReportAllocs()
		h := newHedger(b)
		var r replicas
		slow := run(b, func() (int, error) { return hedge.Do(ctx, h, r.attempt, nil) })
		r.check(b, true, slow)
	})

	b.Run("failsafe-go", func(b *testing.B) {
		b.ReportAllocs()
		// With a context, failsafe-go gives each attempt a child context
		// and cancels the losers.
		exec := failsafe.With[int](hedgepolicy.NewWithDelay[int](hedgeAfter)).WithContext(ctx)
		var r replicas
		fn := failsafeAttempt(r.attempt)
		slow := run(b, func() (int, error) { return exec.GetWithExecution(fn) })
		r.check(b, true, slow)
	})
}

// BenchmarkHedgePrimaryWins is a stream of calls whose primaries all
// answer at once, with a 1 ms hedge delay: what hedging costs the calls
// that do not need it. A hedge can still start when the machine stalls
// the primary for the whole delay; extra-req/op counts such hedges.
//
// The attempts never look at their context, as one answered from memory
// does not: a context that sets up its cancellation only when watched
// (unherd's) sets none up here. BenchmarkHedgePrimaryWinsWatched is the
// same with attempts that do.
func BenchmarkHedgePrimaryWins(b *testing.B) { benchPrimaryWins(b, false) }

// BenchmarkHedgePrimaryWinsWatched is BenchmarkHedgePrimaryWins with
// attempts that read their context's Done channel once before answering,
// as attempts that do I/O do.
func BenchmarkHedgePrimaryWinsWatched(b *testing.B) { benchPrimaryWins(b, true) }

// benchPrimaryWins runs the primary-wins cases, with attempts that watch
// their context if watched is set.
func benchPrimaryWins(b *testing.B, watched bool) {
	ctx := reqCtx(b)
	fast := func(r *replicas) func(context.Context, int) (int, error) {
		return func(ctx context.Context, attempt int) (int, error) {
			if attempt > 0 {
				r.hedges.Add(1)
			} else {
				r.primaries.Add(1)
			}
			if watched {
				// After the count: an attempt that a stall lets lose
				// still counts as made.
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				default:
				}
			}
			return want, nil
		}
	}
	check := func(b *testing.B, r *replicas) {
		b.Helper()
		n, h := r.primaries.Load(), r.hedges.Load()
		if n != int64(b.N) || h > n {
			b.Fatalf("%d primaries and %d hedges for %d calls, want one primary each and at most one hedge", n, h, b.N)
		}
		b.ReportMetric(float64(h)/float64(b.N), extraUnit)
	}

	b.Run("floor-direct", func(b *testing.B) {
		b.ReportAllocs()
		var r replicas
		fn := fast(&r)
		for b.Loop() {
			v, err := fn(ctx, 0)
			checkResult(b, v, err)
		}
		check(b, &r)
	})

	b.Run("unherd", func(b *testing.B) {
		b.ReportAllocs()
		h := newHedger(b)
		var r replicas
		fn := fast(&r)
		for b.Loop() {
			v, err := hedge.Do(ctx, h, fn, nil)
			checkResult(b, v, err)
		}
		check(b, &r)
	})

	b.Run("failsafe-go", func(b *testing.B) {
		b.ReportAllocs()
		exec := failsafe.With[int](hedgepolicy.NewWithDelay[int](hedgeAfter)).WithContext(ctx)
		var r replicas
		fn := failsafeAttempt(fast(&r))
		for b.Loop() {
			v, err := exec.GetWithExecution(fn)
			checkResult(b, v, err)
		}
		check(b, &r)
	})
}
