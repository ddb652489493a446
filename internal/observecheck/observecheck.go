// Package observecheck checks and measures what retry, hedge and the guards
// report to an observe.Observer, outside package observe (which they
// import): the event sequences, and benchmarks shared by every adapter:
// benchmarks of whole calls with and without an observer, so that every
// adapter's per-event cost is measured the same way.
package observecheck

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
)

// ErrDown is the error the calls of this package's helpers fail with.
var ErrDown = errors.New("down")

var errDown = ErrDown

// EachKind is one event of each kind, with the fields its kind uses, for
// an adapter's tests and benchmarks.
var EachKind = []observe.Event{
	{Kind: observe.Attempt, Attempt: 1},
	{Kind: observe.Retry, Attempt: 1, Delay: time.Millisecond, Class: failure.Timeout, Err: ErrDown},
	{Kind: observe.Success, Attempt: 2, Delay: time.Millisecond},
	{Kind: observe.GiveUp, Attempt: 3, Reason: retry.ErrBudgetExhausted, Stop: observe.StopBudgetExhausted, Err: ErrDown},
	{Kind: observe.HedgeStarted, Attempt: 1, Delay: time.Millisecond},
	{Kind: observe.HedgeWon, Attempt: 1},
	{Kind: observe.HedgeDenied, Attempt: 1},
	{Kind: observe.BreakerTransition, From: "closed", To: "open"},
	{Kind: observe.Throttled, Probability: 0.5},
	{Kind: observe.RateRejected, Delay: time.Second, Rate: 0.5},
	{Kind: observe.RateDelayed, Delay: time.Second, Rate: 0.5},
	{Kind: observe.RateCut, Rate: 0.5},
	{Kind: observe.LimitChanged, Limit: 12, InFlight: 9},
	{Kind: observe.LimitRefused, Priority: "sheddable", Err: ErrDown},
	{Kind: observe.LimitWaited, Priority: "normal", Delay: time.Millisecond},
	{Kind: observe.LimitWaited, Priority: "critical", Delay: time.Millisecond, Err: ErrDown},
}

// RetriedTwice makes one retry.Do call with ctx, observed by obs, whose
// first two attempts fail with ErrDown and whose third succeeds, waiting
// base and then 2*base between them (no jitter, no budget).
func RetriedTwice(tb testing.TB, ctx context.Context, obs observe.Observer, base time.Duration) {
	tb.Helper()
	p, err := retry.New(retry.Config{Observer: obs, Budget: budget.Unlimited,
		Backoff: backoff.Schedule{Base: base, Jitter: backoff.None}})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	if err := p.Do(ctx, func(context.Context) error {
		if n++; n < 3 {
			return ErrDown
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
}

// Events is the number of events each case of [BenchmarkCalls] reports
// per call, by case name.
var Events = map[string]int{
	"success": 2, // Attempt, Success
	"retry2":  6, // 3 Attempt, 2 Retry, Success
	"hedged":  2, // HedgeStarted, HedgeWon
}

// BenchmarkCalls measures three calls without an observer (obs=none) and
// with obs (obs=<name>):
//
//   - call=success: retry.Do whose first attempt succeeds;
//   - call=retry2: retry.Do whose call fails twice, with zero delays,
//     then succeeds;
//   - call=hedged: hedge.Do whose primary fails with a non-fatal error,
//     so that the hedge starts at once, on the caller's goroutine, and
//     wins (no timer fires, no goroutine starts).
//
// The difference between the two, divided by [Events], is the cost of
// one event. Compare them with benchstat -col /obs.
func BenchmarkCalls(b *testing.B, name string, obs observe.Observer) {
	for _, kind := range callKinds {
		for _, o := range []struct {
			name string
			obs  observe.Observer
		}{{"none", nil}, {name, obs}} {
			b.Run("call="+kind+"/obs="+o.name, func(b *testing.B) {
				call := newCall(b, kind, o.obs)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if err := call(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// callKinds are the calls of [BenchmarkCalls], in its order.
var callKinds = []string{"success", "retry2", "hedged"}

// CallEvents returns the events of one call of each of [BenchmarkCalls]'s
// kinds, made the same way, by kind: for an adapter's benchmark of its
// observer alone, replaying them.
func CallEvents(tb testing.TB) map[string][]observe.Event {
	tb.Helper()
	out := map[string][]observe.Event{}
	for _, kind := range callKinds {
		var evs []observe.Event
		call := newCall(tb, kind, observe.Func(func(_ context.Context, e observe.Event) { evs = append(evs, e) }))
		if err := call(context.Background()); err != nil {
			tb.Fatal(err)
		}
		if len(evs) != Events[kind] {
			tb.Fatalf("call=%s: %d events, Events says %d", kind, len(evs), Events[kind])
		}
		out[kind] = evs
	}
	return out
}

// newCall returns a call of the kind named (one of callKinds), observed
// by obs; each time it is called it makes one such call.
func newCall(tb testing.TB, kind string, obs observe.Observer) func(context.Context) error {
	tb.Helper()
	switch kind {
	case "success":
		return retryCall(tb, obs, 0)
	case "retry2":
		return retryCall(tb, obs, 2)
	case "hedged":
		return hedgedCall(tb, obs)
	}
	tb.Fatalf("no call of kind %q", kind)
	return nil
}

// retryCall is retry.Do with a call that fails failures times before it
// succeeds.
func retryCall(tb testing.TB, obs observe.Observer, failures int) func(context.Context) error {
	cfg := retry.Config{Observer: obs}
	if failures > 0 {
		//unherdvet:ignore misuse the benchmark measures the retry path itself, with no budget and no wait
		cfg.Budget, cfg.Backoff = budget.Unlimited, backoff.Schedule{Immediate: true}
	}
	//unherdvet:ignore misuse built once per benchmark, outside the timed loop
	p, err := retry.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	op := func(context.Context) error {
		if n++; n%(failures+1) != 0 {
			return errDown
		}
		return nil
	}
	return func(ctx context.Context) error { return p.Do(ctx, op) }
}

// hedgedCall is hedge.Do with a primary that fails non-fatally and a
// hedge that succeeds.
func hedgedCall(tb testing.TB, obs observe.Observer) func(context.Context) error {
	//unherdvet:ignore misuse the benchmark measures every hedge, so no budget may stop one
	h, err := hedge.New(hedge.Config{Delay: time.Hour, MaxHedges: 1, Budget: budget.Unlimited,
		NonFatal: func(error) bool { return true }, Observer: obs})
	if err != nil {
		tb.Fatal(err)
	}
	fn := func(_ context.Context, attempt int) (int, error) {
		if attempt == 0 {
			return 0, errDown
		}
		return attempt, nil
	}
	return func(ctx context.Context) error {
		if v, err := hedge.Do(ctx, h, fn, nil); v != 1 || err != nil {
			return fmt.Errorf("hedge.Do = %d, %v; want the hedge's 1, nil", v, err)
		}
		return nil
	}
}

// NoAllocation checks that obs allocates for none of [EachKind]'s events,
// after it has seen each once (the first record of a point may allocate
// it). name prefixes the errors.
func NoAllocation(t *testing.T, name string, obs observe.Observer) {
	t.Helper()
	ctx := context.Background()
	for _, e := range EachKind {
		obs.Observe(ctx, e)
		if allocs := testing.AllocsPerRun(100, func() { obs.Observe(ctx, e) }); allocs != 0 {
			t.Errorf("%s: %v: %v allocations", name, e.Kind, allocs)
		}
	}
}

// BenchmarkEvents measures obs on each of [EachKind]'s events, in
// sub-benchmarks named prefix and the event's kind.
func BenchmarkEvents(b *testing.B, prefix string, obs observe.Observer) {
	ctx := context.Background()
	for _, e := range EachKind {
		b.Run(prefix+e.Kind.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obs.Observe(ctx, e)
			}
		})
	}
}
