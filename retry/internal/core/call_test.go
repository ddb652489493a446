package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// t0 is the explicit instant the pure state-machine tests run at.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// constant is a schedule that waits exactly d before every retry.
func constant(d time.Duration) backoff.Schedule {
	return backoff.Schedule{Base: d, ThrottledBase: d, Cap: d, Constant: true, Jitter: backoff.None}
}

func TestCallSequence(t *testing.T) {
	b := &fakeBudget{allow: 9}
	p := mustNew(t, Config{Budget: b, MaxAttempts: 3, Backoff: constant(time.Second)})
	c := p.Begin(false)
	type step struct {
		err  error
		want Decision
	}
	steps := []step{
		// Attempt 1 fails: a retry is withdrawn as transient.
		{errBoom, Decision{Delay: time.Second, Class: failure.Transient}},
		// Attempt 2 is throttled: withdrawn as throttled.
		{Judge(errBoom, Verdict{Class: failure.Throttled}), Decision{Delay: time.Second, Class: failure.Throttled}},
		// Attempt 3 fails and is the last allowed.
		{errBoom, Decision{Reason: ErrAttemptsExhausted, Class: failure.Transient}},
	}
	for i, s := range steps {
		if err := c.Admit(context.Background()); err != nil {
			t.Fatalf("Admit %d: %v", i+1, err)
		}
		if got := c.Attempts(); got != i+1 {
			t.Fatalf("Attempts() = %d, want %d", got, i+1)
		}
		got := c.Done(t0, time.Time{}, s.err, 0)
		if got.Reason != s.want.Reason || got.Delay != s.want.Delay || got.Class != s.want.Class {
			t.Fatalf("step %d: Done = %+v, want %+v", i+1, got, s.want)
		}
	}
	want := []string{
		"record n=1 failed=true class=transient charged=transient",
		"withdraw transient",
		"record n=2 failed=true class=throttled charged=transient",
		"withdraw throttled",
		"record n=3 failed=true class=transient charged=throttled",
	}
	if diff := cmp.Diff(want, b.log); diff != "" {
		t.Fatal(diff)
	}
	var re *Error
	if err := c.Err(Decision{Reason: ErrAttemptsExhausted}); !errors.As(err, &re) || re.Attempts != 3 || !errors.Is(err, errBoom) {
		t.Fatalf("Err = %v", err)
	}
	if err := c.Err(Decision{}); err != nil {
		t.Fatalf("Err of a Decision without a Reason = %v, want nil", err)
	}
}

func TestCallRecordsSuccess(t *testing.T) {
	b := &fakeBudget{allow: 9}
	p := mustNew(t, Config{Budget: b, Backoff: constant(time.Second)})
	c := p.Begin(false)
	_ = c.Admit(context.Background())
	c.Done(t0, time.Time{}, Judge(errBoom, Verdict{Class: failure.Throttled}), 0)
	_ = c.Admit(context.Background())
	if d := c.Done(t0, time.Time{}, nil, 0); d != (Decision{}) {
		t.Fatalf("Done(success) = %+v, want the zero Decision", d)
	}
	// The success is recorded with the class its retry was charged as,
	// so that a token bucket refunds the right cost.
	want := []string{
		"record n=1 failed=true class=throttled charged=transient",
		"withdraw throttled",
		"record n=2 failed=false class=transient charged=throttled",
	}
	if diff := cmp.Diff(want, b.log); diff != "" {
		t.Fatal(diff)
	}
}

func TestCallNested(t *testing.T) {
	p := mustNew(t, Config{MaxAttempts: 5, NestedAttempts: 2, Backoff: constant(0), Budget: budget.Unlimited})
	for _, tc := range []struct {
		nested bool
		want   int
	}{{false, 5}, {true, 2}} {
		c := p.Begin(tc.nested)
		n := 0
		for {
			_ = c.Admit(context.Background())
			n++
			if d := c.Done(t0, time.Time{}, errBoom, 0); d.Reason != nil {
				break
			}
		}
		if n != tc.want {
			t.Errorf("Begin(%v): %d attempts, want %d", tc.nested, n, tc.want)
		}
	}
}

func TestCallDeadline(t *testing.T) {
	tests := []struct {
		name     string
		deadline time.Time
		want     error
	}{
		{"no deadline", time.Time{}, nil},
		{"ends after the wait", t0.Add(time.Second + 1), nil},
		{"ends with the wait", t0.Add(time.Second), ErrDeadline},
		{"ends during the wait", t0.Add(time.Second - 1), ErrDeadline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBudget{allow: 9}
			p := mustNew(t, Config{Budget: b, Backoff: constant(time.Second)})
			c := p.Begin(false)
			_ = c.Admit(context.Background())
			d := c.Done(t0, tc.deadline, errBoom, 0)
			if d.Reason != tc.want || d.Delay != time.Second {
				t.Fatalf("Done = %+v, want Reason %v, Delay 1s", d, tc.want)
			}
			// A call stopped by its deadline withdraws nothing.
			withdrew := len(b.log) == 2
			if withdrew != (tc.want == nil) {
				t.Fatalf("budget log %q", b.log)
			}
		})
	}
}

func TestCallRefundsRejectedRetry(t *testing.T) {
	tb, err := budget.NewTokenBucket(budget.TokenBucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGuard{allow: 1} // admits the first attempt, rejects the retry
	p := mustNew(t, Config{Budget: tb, Guards: []admission.Guard{g}, Backoff: constant(0)})
	c := p.Begin(false)
	if err := c.Admit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := c.Done(t0, time.Time{}, errBoom, 0); d.Reason != nil {
		t.Fatalf("Done = %+v, want a retry", d)
	}
	if got := tb.Tokens(); got != tb.Capacity()-budget.DefaultTransientCost {
		t.Fatalf("tokens after the withdrawal = %d", got)
	}
	err = c.Admit(context.Background())
	if !errors.Is(err, ErrRejected) || !errors.Is(err, errOpen) || !errors.Is(err, errBoom) {
		t.Fatalf("Admit = %v, want ErrRejected wrapping the guard's error and the last error", err)
	}
	// The retry was never made: its tokens are back.
	if got := tb.Tokens(); got != tb.Capacity() {
		t.Fatalf("tokens after the rejection = %d, want %d", got, tb.Capacity())
	}
}

func TestCallCancel(t *testing.T) {
	tb, err := budget.NewTokenBucket(budget.TokenBucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGuard{allow: 9}
	p := mustNew(t, Config{Budget: tb, Guards: []admission.Guard{g}, Backoff: constant(time.Second)})
	c := p.Begin(false)
	_ = c.Admit(context.Background())
	c.Done(t0, time.Time{}, errBoom, 0)
	// The caller gives up during the wait: the retry is refunded.
	cause := errors.New("caller left")
	err = c.Cancel(nil, cause)
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, cause) || !errors.Is(err, errBoom) {
		t.Fatalf("Cancel = %v", err)
	}
	if got := tb.Tokens(); got != tb.Capacity() {
		t.Fatalf("tokens = %d, want %d", got, tb.Capacity())
	}
	// And during an attempt: the guard hears it was abandoned.
	c = p.Begin(false)
	_ = c.Admit(context.Background())
	_ = c.Cancel(errBoom, cause)
	want := []string{
		"1 err=boom class=transient abandoned=false",
		"2 err=boom class=transient abandoned=true",
	}
	if diff := cmp.Diff(want, g.outcomes); diff != "" {
		t.Fatal(diff)
	}
}

// admitAll admits every attempt and ignores outcomes.
type admitAll struct{}

func (admitAll) Admit(context.Context) (uint64, error)           { return 1, nil }
func (admitAll) Done(context.Context, uint64, admission.Outcome) {}

func TestCallAllocs(t *testing.T) {
	p := mustNew(t, Config{Guards: []admission.Guard{admitAll{}}})
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c := p.Begin(false)
		if err := c.Admit(ctx); err != nil {
			t.Fatal(err)
		}
		c.Done(time.Time{}, time.Time{}, nil, 0)
	})
	if allocs != 0 {
		t.Fatalf("a guarded first-attempt success allocates %v times, want 0", allocs)
	}
}
