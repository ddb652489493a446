package observe_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
)

// The events of retry, hedge and the guards are checked in
// internal/observecheck, outside this package, which they import.

// recorder keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

func (r *recorder) Observe(_ context.Context, e observe.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

var (
	errDown   = errors.New("down")
	errBudget = errors.New("retry: budget exhausted") // a Reason as retry gives it
	// limit.ErrLimited's message, as a refusal carries it
	errLimited = errors.New("limit: over the concurrency limit")
)

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	o := observe.Logger(l, "payments")
	ctx := context.Background()
	o.Observe(ctx, observe.Event{Kind: observe.Attempt, Attempt: 1}) // Debug: below the level
	o.Observe(ctx, observe.Event{Kind: observe.Retry, Attempt: 1, Delay: 40 * time.Millisecond, Class: failure.Throttled, Err: errDown})
	o.Observe(ctx, observe.Event{Kind: observe.GiveUp, Attempt: 2, Reason: errBudget, Err: errDown, Delay: 40 * time.Millisecond})
	o.Observe(ctx, observe.Event{Kind: observe.BreakerTransition, From: "closed", To: "open"})
	o.Observe(ctx, observe.Event{Kind: observe.RateDelayed, Delay: 2 * time.Second, Rate: 0.5}) // Debug
	o.Observe(ctx, observe.Event{Kind: observe.RateCut, Rate: 0.5})
	o.Observe(ctx, observe.Event{Kind: observe.LimitRefused, Priority: "sheddable", Err: errLimited}) // Debug
	debug := observe.Logger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})), "api")
	debug.Observe(ctx, observe.Event{Kind: observe.LimitChanged, Limit: 12, InFlight: 9})
	debug.Observe(ctx, observe.Event{Kind: observe.LimitRefused, Priority: "sheddable", Err: errLimited})
	debug.Observe(ctx, observe.Event{Kind: observe.LimitWaited, Priority: "critical", Delay: 3 * time.Millisecond})
	want := strings.Join([]string{
		`level=INFO msg="unherd retry" policy=payments attempt=1 delay=40ms class=throttled err=down`,
		`level=WARN msg="unherd give_up" policy=payments reason="retry: budget exhausted" attempt=2 delay=40ms err=down`,
		`level=WARN msg="unherd breaker_transition" policy=payments from=closed to=open`,
		`level=INFO msg="unherd rate_cut" policy=payments rate=0.5`,
		`level=DEBUG msg="unherd limit_changed" policy=api limit=12 in_flight=9`,
		`level=DEBUG msg="unherd limit_refused" policy=api priority=sheddable delay=0s err="limit: over the concurrency limit"`,
		`level=DEBUG msg="unherd limit_waited" policy=api priority=critical delay=3ms`,
	}, "\n") + "\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestMulti(t *testing.T) {
	if observe.Multi(nil, nil) != nil {
		t.Error("Multi of nils is not nil")
	}
	a, b := &recorder{}, &recorder{}
	if observe.Multi(nil, a) != observe.Observer(a) {
		t.Error("Multi of one observer is not that observer")
	}
	observe.Multi(a, nil, b).Observe(context.Background(), observe.Event{Kind: observe.Attempt})
	if len(a.events) != 1 || len(b.events) != 1 {
		t.Errorf("events %d and %d, want one each", len(a.events), len(b.events))
	}
	if got := observe.Kind(0).String() + "," + observe.HedgeWon.String() + "," + observe.RateRejected.String() + "," +
		observe.LimitChanged.String() + "," + observe.LimitRefused.String() + "," + observe.LimitWaited.String() + "," +
		observe.NumKinds.String(); got != "unknown,hedge_won,rate_rejected,limit_changed,limit_refused,limit_waited,unknown" {
		t.Errorf("kind names %q", got)
	}
	if got := observe.StopOther.String() + "," + observe.StopBudgetExhausted.String() + "," + observe.NumStops.String(); got != "other,budget_exhausted,other" {
		t.Errorf("stop names %q", got)
	}
	if observe.StateIndex("half-open") != 2 || observe.StateIndex("ajar") != -1 {
		t.Error("StateIndex")
	}
	if observe.PriorityIndex("critical") != 0 || observe.PriorityIndex("sheddable") != 2 || observe.PriorityIndex("urgent") != -1 {
		t.Error("PriorityIndex")
	}
}

// On hands its function the events of its kind, and no others.
func TestOn(t *testing.T) {
	var got []int
	o := observe.On(observe.Retry, func(e observe.Event) { got = append(got, e.Attempt) })
	for i, k := range []observe.Kind{observe.Attempt, observe.Retry, observe.Attempt, observe.Retry, observe.GiveUp} {
		o.Observe(context.Background(), observe.Event{Kind: k, Attempt: i})
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("On(Retry) saw attempts %v, want [1 3]", got)
	}
}
