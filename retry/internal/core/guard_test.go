package core

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
)

// fakeBudget allows a fixed number of withdrawals and logs every call.
type fakeBudget struct {
	allow int
	log   []string
}

func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &fakeBudget{allow: 1}
		p := mustNew(t, Config{Budget: b, MaxAttempts: 5})
		calls := 0
		err := p.Do(t.Context(), failing(9, errBoom, &calls))
		if !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, errBoom) || calls != 2 {
			t.Fatalf("calls = %d, err = %v", calls, err)
		}
		want := []string{
			"record n=1 failed=true class=transient charged=transient",
			"withdraw transient",
			"record n=2 failed=true class=transient charged=transient",
			"withdraw transient",
		}
		if diff := cmp.Diff(want, b.log); diff != "" {
			t.Fatal(diff)
		}

		b = &fakeBudget{allow: 9}
		p = mustNew(t, Config{Budget: b})
		calls = 0
		if err := p.Do(t.Context(), failing(1, Judge(errBoom, Verdict{Class: failure.Throttled}), &calls)); err != nil {
			t.Fatal(err)
		}
		want = []string{
			"record n=1 failed=true class=throttled charged=transient",
			"withdraw throttled",
			"record n=2 failed=false class=transient charged=throttled",
		}
		if diff := cmp.Diff(want, b.log); diff != "" {
			t.Fatal(diff)
		}
	})
}

// fakeGuard rejects after allow admissions and logs outcomes.
type fakeGuard struct {
	allow    int
	next     uint64
	outcomes []string
}

var errOpen = errors.New("breaker open")

func TestGuards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g1, g2 := &fakeGuard{allow: 9}, &fakeGuard{allow: 1}
		p := mustNew(t, Config{Guards: []admission.Guard{g1, g2}, MaxAttempts: 5})
		calls := 0
		err := p.Do(t.Context(), failing(9, errBoom, &calls))
		if calls != 1 || !errors.Is(err, ErrRejected) || !errors.Is(err, errOpen) || !errors.Is(err, errBoom) {
			t.Fatalf("calls = %d, err = %v", calls, err)
		}
		var re *Error
		if !errors.As(err, &re) || re.Attempts != 1 {
			t.Fatalf("err = %#v", err)
		}
		want1 := []string{"1 err=boom class=transient abandoned=false", "2 err=<nil> class=transient abandoned=true"}
		if diff := cmp.Diff(want1, g1.outcomes); diff != "" {
			t.Fatal(diff)
		}
		if diff := cmp.Diff([]string{"1 err=boom class=transient abandoned=false"}, g2.outcomes); diff != "" {
			t.Fatal(diff)
		}
	})
}

func TestJudgedFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &fakeBudget{allow: 9}
		g := &fakeGuard{allow: 9}
		p := mustNew(t, Config{Budget: b, Guards: []admission.Guard{g}})
		calls := 0
		err := p.Do(t.Context(), failing(9, Judge(Judge(errBoom, Verdict{Class: failure.Throttled}), Verdict{Final: true}), &calls))
		if calls != 1 || !errors.Is(err, ErrFinal) || !errors.Is(err, errBoom) || errors.Is(err, ErrPermanent) {
			t.Fatalf("calls = %d, err = %v", calls, err)
		}
		// The budget and the guard still see the failure's own class.
		if diff := cmp.Diff([]string{"record n=1 failed=true class=throttled charged=transient"}, b.log); diff != "" {
			t.Fatal(diff)
		}
		if diff := cmp.Diff([]string{"1 err=boom class=throttled abandoned=false"}, g.outcomes); diff != "" {
			t.Fatal(diff)
		}
		if Judge(nil, Verdict{Final: true}) != nil {
			t.Fatal("Judge(nil, Verdict{Final: true}) != nil")
		}
	})
}

var errLocal = NewRejection("test: rejected locally")

// A local rejection that reaches the loop as the operation's error is
// never retried and not charged to the budget.
func TestRejectionFromOperation(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"sentinel", errLocal},
		{"wrapped", fmt.Errorf("call: %w", errLocal)},
		{"inner policy's error", &Error{Reason: ErrRejected, Cause: errBoom}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &fakeBudget{allow: 9}
				g := &fakeGuard{allow: 9}
				p := mustNew(t, Config{Budget: b, Guards: []admission.Guard{g}})
				calls := 0
				err := p.Do(t.Context(), failing(9, tc.err, &calls))
				if calls != 1 || !errors.Is(err, ErrRejected) {
					t.Fatalf("calls = %d, err = %v", calls, err)
				}
				if len(b.log) != 0 {
					t.Fatalf("budget saw %v", b.log)
				}
				if diff := cmp.Diff([]string{fmt.Sprintf("1 err=%v class=transient abandoned=true", tc.err)}, g.outcomes); diff != "" {
					t.Fatal(diff)
				}
			})
		})
	}
}

// An attempt that panics still reports to the guards, as abandoned.
func TestGuardsHearOfPanics(t *testing.T) {
	g := &fakeGuard{allow: 9}
	p := mustNew(t, Config{Guards: []admission.Guard{g}})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic not propagated")
			}
		}()
		p.Do(t.Context(), func(context.Context) error { panic("boom") })
	}()
	if diff := cmp.Diff([]string{"1 err=<nil> class=transient abandoned=true"}, g.outcomes); diff != "" {
		t.Fatal(diff)
	}
}

// waitingGuard blocks in Admit until the caller gives up.
type waitingGuard struct{}

// A guard that gives up because the caller did reports cancellation, not a
// rejection.
func TestGuardWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{Guards: []admission.Guard{waitingGuard{}}})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := p.Do(ctx, func(context.Context) error { return nil })
		if !errors.Is(err, ErrCancelled) || errors.Is(err, ErrRejected) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestGuardedClassifiesOnce checks that a failed attempt is classified
// once, for the guards and the retry decision together, and that the
// guards and the budget see the same class.
func TestGuardedClassifiesOnce(t *testing.T) {
	for _, guards := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("guards=%d", guards), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var gs []admission.Guard
				var fakes []*fakeGuard
				for range guards {
					g := &fakeGuard{allow: 9}
					gs = append(gs, g)
					fakes = append(fakes, g)
				}
				classified := 0
				b := &fakeBudget{allow: 9}
				p := mustNew(t, Config{Budget: b, Guards: gs, MaxAttempts: 3, Classify: func(error) failure.Class {
					classified++
					return failure.Throttled
				}})
				calls := 0
				err := p.Do(t.Context(), failing(9, errBoom, &calls))
				if calls != 3 || !errors.Is(err, ErrAttemptsExhausted) {
					t.Fatalf("calls = %d, err = %v", calls, err)
				}
				if classified != calls {
					t.Fatalf("classifier called %d times for %d failed attempts", classified, calls)
				}
				for _, g := range fakes {
					want := []string{
						"1 err=boom class=throttled abandoned=false",
						"2 err=boom class=throttled abandoned=false",
						"3 err=boom class=throttled abandoned=false",
					}
					if diff := cmp.Diff(want, g.outcomes); diff != "" {
						t.Fatal(diff)
					}
				}
				want := []string{
					"record n=1 failed=true class=throttled charged=transient",
					"withdraw throttled",
					"record n=2 failed=true class=throttled charged=throttled",
					"withdraw throttled",
					"record n=3 failed=true class=throttled charged=throttled",
				}
				if diff := cmp.Diff(want, b.log); diff != "" {
					t.Fatal(diff)
				}
			})
		})
	}
}

// ctxGuard records the context of every outcome it is told.
type ctxGuard struct{ ctxs []context.Context }

func (g *ctxGuard) Admit(context.Context) (uint64, error) { return 0, nil }
func (g *ctxGuard) Done(ctx context.Context, _ uint64, _ admission.Outcome) {
	g.ctxs = append(g.ctxs, ctx)
}

type guardCtxKey struct{}

// TestGuardHearsCallContext: every guard is told every outcome with the
// call's context, so that its observer can report with the caller's
// trace.
func TestGuardHearsCallContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g1, g2 := &ctxGuard{}, &ctxGuard{}
		p := mustNew(t, Config{Guards: []admission.Guard{g1, g2}, MaxAttempts: 3})
		ctx := context.WithValue(t.Context(), guardCtxKey{}, "call")
		calls := 0
		if err := p.Do(ctx, failing(2, errBoom, &calls)); err != nil {
			t.Fatal(err)
		}
		for n, g := range []*ctxGuard{g1, g2} {
			if len(g.ctxs) != 3 {
				t.Fatalf("guard %d told %d outcomes, want 3", n+1, len(g.ctxs))
			}
			for i, c := range g.ctxs {
				if c == nil || c.Value(guardCtxKey{}) != "call" {
					t.Errorf("guard %d, outcome %d: context %v, want the call's", n+1, i+1, c)
				}
			}
		}
	})
}
