package throttle

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
)

type callKey struct{}

// seen is an event as the tests compare it: its kind, delay and rate,
// and the value its context carries under callKey.
type seen struct {
	Kind  observe.Kind
	Delay time.Duration
	Rate  float64
	Call  string
}

func recordTo(got *[]seen) observe.Observer {
	return observe.Func(func(ctx context.Context, e observe.Event) {
		call, _ := ctx.Value(callKey{}).(string)
		*got = append(*got, seen{e.Kind, e.Delay, e.Rate, call})
	})
}

func withCall(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callKey{}, name)
}

// TestRateLimiterEvents drives a RateLimiter through a retry policy (one
// attempt per call): a throttling response cuts the rate (RateCut, with
// the context of the call that was throttled), the next call waits for a
// token (RateDelayed, 2 s at 0.5 tokens/s), and a call whose deadline
// comes before its token is rejected (RateRejected, with the wait it
// would have needed). Each event carries its own call's context. A
// success is no event.
func TestRateLimiterEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []seen
		r, err := NewRateLimiter(RateLimiterSettings{Observer: recordTo(&got)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := retry.New(retry.Config{MaxAttempts: 1, Guards: []admission.Guard{r}})
		if err != nil {
			t.Fatal(err)
		}
		errSlow := errors.New("slow down")
		ctx := context.Background()
		if err := p.Do(withCall(ctx, "throttled"), func(context.Context) error { return retry.Judge(errSlow, retry.Verdict{Class: failure.Throttled}) }); !errors.Is(err, errSlow) {
			t.Fatalf("throttled call: %v", err)
		}
		if err := p.Do(withCall(ctx, "delayed"), func(context.Context) error { return nil }); err != nil {
			t.Fatalf("delayed call: %v", err)
		}
		short, cancel := context.WithTimeout(withCall(ctx, "rejected"), 100*time.Millisecond)
		defer cancel()
		if err := p.Do(short, func(context.Context) error { return nil }); !errors.Is(err, ErrRateLimited) {
			t.Fatalf("rejected call: %v, want ErrRateLimited", err)
		}
		want := []seen{
			{observe.RateCut, 0, MinFillRate, "throttled"},
			{observe.RateDelayed, 2 * time.Second, MinFillRate, "delayed"},
			// At t = 2 s the delayed call's success measured a send rate
			// of 0.8/s (2 requests over the first 2 s, smoothed by 0.8),
			// so the rate grew to min(cubic 3.2, 2*0.8) = 1.6 tokens/s;
			// the bucket is empty, so the next token is 1/1.6 s away,
			// past the 100 ms deadline.
			{observe.RateRejected, 625 * time.Millisecond, 1.6, "rejected"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// TestRateLimiterEventsByHand: the methods that take no context report
// with context.Background: a Done without an Outcome.Ctx, and ReserveAt.
// A success is no event, and neither is a reservation that need not wait.
func TestRateLimiterEventsByHand(t *testing.T) {
	var got []seen
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r, err := NewRateLimiter(RateLimiterSettings{Observer: recordTo(&got), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.ReserveAt(t0); w != 0 {
		t.Fatalf("a reservation before any throttle waits %v", w)
	}
	r.DoneAt(t0, 0, throttled)
	r.DoneAt(t0, 0, success)
	if w := r.ReserveAt(t0); w != 2*time.Second {
		t.Fatalf("reservation waits %v, want 2s", w)
	}
	want := []seen{{observe.RateCut, 0, MinFillRate, ""}, {observe.RateDelayed, 2 * time.Second, MinFillRate, ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
