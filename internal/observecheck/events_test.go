package observecheck_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/observecheck"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/throttle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type ctxKey struct{}

// recorder keeps every event, and fails the test if one arrives without
// the call's context.
type recorder struct {
	t      *testing.T
	mu     sync.Mutex
	events []observe.Event
	want   any // the value under ctxKey, or nil to not check
}

func (r *recorder) Observe(ctx context.Context, e observe.Event) {
	if r.want != nil && ctx.Value(ctxKey{}) != r.want {
		r.t.Errorf("%v event without the call's context", e.Kind)
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

var errDown = observecheck.ErrDown

// cmpErrors compares errors by identity (errors.Is both ways).
var cmpErrors = cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) && errors.Is(b, a) })

func TestRetryEvents(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "call")
	r := &recorder{t: t, want: "call"}
	observecheck.RetriedTwice(t, ctx, r, time.Millisecond)
	want := []observe.Event{
		{Kind: observe.Attempt, Attempt: 1},
		{Kind: observe.Retry, Attempt: 1, Delay: time.Millisecond, Err: errDown, Class: failure.Transient},
		{Kind: observe.Attempt, Attempt: 2},
		{Kind: observe.Retry, Attempt: 2, Delay: 2 * time.Millisecond, Err: errDown, Class: failure.Transient},
		{Kind: observe.Attempt, Attempt: 3},
		{Kind: observe.Success, Attempt: 3, Delay: 3 * time.Millisecond},
	}
	if diff := cmp.Diff(want, r.events, cmpErrors); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// refusing is a budget that refuses every retry.
type refusing struct{}

func (refusing) Withdraw(failure.Class) bool { return false }
func (refusing) Record(budget.Attempt)       {}

func TestRetryGiveUpBudget(t *testing.T) {
	r := &recorder{t: t}
	p, err := retry.New(retry.Config{Observer: r, Budget: refusing{}})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Do(context.Background(), func(context.Context) error { return errDown })
	if !errors.Is(err, retry.ErrBudgetExhausted) {
		t.Fatalf("Do = %v, want ErrBudgetExhausted", err)
	}
	want := []observe.Event{
		{Kind: observe.Attempt, Attempt: 1},
		{Kind: observe.GiveUp, Attempt: 1, Err: errDown, Reason: retry.ErrBudgetExhausted, Stop: observe.StopBudgetExhausted},
	}
	if diff := cmp.Diff(want, r.events, cmpErrors); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRetryGiveUpPermanent(t *testing.T) {
	r := &recorder{t: t}
	p, err := retry.New(retry.Config{Observer: r})
	if err != nil {
		t.Fatal(err)
	}
	perm := retry.MarkPermanent(errDown)
	_ = p.Do(context.Background(), func(context.Context) error { return perm })
	if len(r.events) != 2 || r.events[1].Kind != observe.GiveUp || !errors.Is(r.events[1].Reason, retry.ErrPermanent) ||
		r.events[1].Stop != observe.StopPermanent {
		t.Errorf("events %+v, want an attempt and a permanent give-up", r.events)
	}
}

func TestHedgeEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.WithValue(t.Context(), ctxKey{}, "call")
		r := &recorder{t: t, want: "call"}
		h, err := hedge.New(hedge.Config{Delay: 10 * time.Millisecond, MaxHedges: 1, Budget: budget.Unlimited, Observer: r})
		if err != nil {
			t.Fatal(err)
		}
		// The primary stalls; the hedge answers at once and wins.
		_, err = hedge.Do(ctx, h, func(ctx context.Context, attempt int) (int, error) {
			if attempt == 0 {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return attempt, nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The primary answers first: a hedge started and lost.
		_, err = hedge.Do(ctx, h, func(ctx context.Context, attempt int) (int, error) {
			if attempt == 0 {
				time.Sleep(15 * time.Millisecond)
				return 0, nil
			}
			<-ctx.Done()
			return 0, ctx.Err()
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// No hedge at all: no event.
		_, _ = hedge.Do(ctx, h, func(context.Context, int) (int, error) { return 0, nil }, nil)
		synctest.Wait()
		want := []observe.Event{
			{Kind: observe.HedgeStarted, Attempt: 1, Delay: 10 * time.Millisecond},
			{Kind: observe.HedgeWon, Attempt: 1},
			{Kind: observe.HedgeStarted, Attempt: 1, Delay: 10 * time.Millisecond},
			{Kind: observe.HedgeLost, Attempt: 1},
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if diff := cmp.Diff(want, r.events, cmpErrors); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// TestHedgeDenied: a hedge the budget refuses is reported, and the call,
// which started none, reports nothing else.
func TestHedgeDenied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{t: t}
		h, err := hedge.New(hedge.Config{Delay: 10 * time.Millisecond, Budget: refusing{}, Observer: r})
		if err != nil {
			t.Fatal(err)
		}
		_, err = hedge.Do(t.Context(), h, func(ctx context.Context, attempt int) (int, error) {
			time.Sleep(20 * time.Millisecond)
			return attempt, nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		if diff := cmp.Diff([]observe.Event{{Kind: observe.HedgeDenied, Attempt: 1}}, r.events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

func TestBreakerEvents(t *testing.T) {
	r := &recorder{t: t}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := breaker.New(breaker.Settings{ConsecutiveFailures: 2, OpenDuration: time.Second, OpenJitter: -1,
		Observer: r, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		done, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		done(errDown)
	}
	now = now.Add(2 * time.Second)
	done, err := b.Allow() // half-open probe
	if err != nil {
		t.Fatal(err)
	}
	done(nil)
	want := []observe.Event{
		{Kind: observe.BreakerTransition, From: "closed", To: "open"},
		{Kind: observe.BreakerTransition, From: "open", To: "half-open"},
		{Kind: observe.BreakerTransition, From: "half-open", To: "closed"},
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestThrottleEvents(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "call")
	r := &recorder{t: t, want: "call"}
	a, err := throttle.NewAdaptive(throttle.AdaptiveSettings{Observer: r})
	if err != nil {
		t.Fatal(err)
	}
	// Every call fails: the rejection probability climbs towards 1.
	rejected := 0
	for range 1000 {
		tk, err := a.Admit(ctx)
		if err != nil {
			rejected++
			continue
		}
		a.Done(context.Background(), tk, admission.Outcome{Err: errDown, Class: failure.Transient})
	}
	if rejected == 0 || len(r.events) != rejected {
		t.Fatalf("%d rejections, %d events; want one event per rejection", rejected, len(r.events))
	}
	for _, e := range r.events {
		if e.Kind != observe.Throttled || !(e.Probability > 0 && e.Probability <= 1) {
			t.Fatalf("event %+v, want Throttled with a probability in (0, 1]", e)
		}
	}
}

// TestNoAllocation: with an observer that keeps nothing, a call whose
// first attempt succeeds still allocates nothing, and neither does one
// that retries twice.
func TestNoAllocation(t *testing.T) {
	var n counter
	for _, cfg := range []retry.Config{
		{Observer: &n},
		{Observer: &n, Budget: budget.Unlimited, Backoff: backoff.Schedule{Immediate: true}},
	} {
		p, err := retry.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		op := func(context.Context) error {
			if i++; cfg.Budget != nil && i%3 != 0 {
				return errDown
			}
			return nil
		}
		if allocs := testing.AllocsPerRun(100, func() { _ = p.Do(context.Background(), op) }); allocs != 0 {
			t.Errorf("%d allocations per call with an observer (budget %v)", int(allocs), cfg.Budget)
		}
	}
	if n.n.Load() == 0 {
		t.Error("the observer saw nothing")
	}
}
