package breaker

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
)

type callKey struct{}

// TestObserverSeesCallContext: every state change reaches the observer
// with the context of the call that caused it, through a retry policy's
// guards: the failure that opens the breaker (reported by Done, via
// Outcome.Ctx), the admission that moves it to half-open (Admit's ctx)
// and the probe's success that closes it (Done again).
func TestObserverSeesCallContext(t *testing.T) {
	type seen struct{ From, To, Call string }
	var got []seen
	obs := observe.Func(func(ctx context.Context, e observe.Event) {
		call, _ := ctx.Value(callKey{}).(string)
		got = append(got, seen{e.From, e.To, call})
	})
	now := t0
	b := mustNew(t, Settings{ConsecutiveFailures: 1, OpenDuration: time.Second, OpenJitter: -1,
		SuccessThreshold: 1, Observer: obs, Now: func() time.Time { return now }})
	p, err := retry.New(retry.Config{MaxAttempts: 1, Guards: []admission.Guard{b}})
	if err != nil {
		t.Fatal(err)
	}
	ctx1 := context.WithValue(context.Background(), callKey{}, "call-1")
	if err := p.Do(ctx1, func(context.Context) error { return errBoom }); err == nil {
		t.Fatal("the failing call succeeded")
	}
	now = now.Add(2 * time.Second)
	ctx2 := context.WithValue(context.Background(), callKey{}, "call-2")
	if err := p.Do(ctx2, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	want := []seen{{"closed", "open", "call-1"}, {"open", "half-open", "call-2"}, {"half-open", "closed", "call-2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestObserverWithoutContext: a Done without an Outcome.Ctx (a caller
// driving the breaker by hand) reports its change with
// context.Background, not a nil context.
func TestObserverWithoutContext(t *testing.T) {
	var ctxs []context.Context
	b := mustNew(t, Settings{ConsecutiveFailures: 1, Observer: observe.Func(func(ctx context.Context, e observe.Event) {
		ctxs = append(ctxs, ctx)
	})})
	ticket, err := b.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Done(context.Background(), ticket, transient)
	if len(ctxs) != 1 || ctxs[0] == nil {
		t.Fatalf("contexts %v, want one non-nil", ctxs)
	}
}
