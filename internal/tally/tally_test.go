package tally_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/guardtest"
	"github.com/unherd/unherd/internal/tally"
	"github.com/unherd/unherd/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestGuardAllow(t *testing.T) {
	ctx := context.Background()
	g := &tally.Guard{Allow: 2}
	for i, want := range []error{nil, nil, tally.ErrRejected} {
		if _, err := g.Admit(ctx); err != want {
			t.Fatalf("Admit %d: %v, want %v", i+1, err, want)
		}
	}
	if !errors.Is(tally.ErrRejected, retry.ErrRejected) {
		t.Error("ErrRejected does not match retry.ErrRejected")
	}
	g.Done(ctx, 1, guardtest.Success)
	g.Done(ctx, 2, guardtest.Transient)
	want := tally.GuardCounts{Admitted: 2, Rejected: 1, Succeeded: 1, Failed: 1}
	if got := g.Counts(); got != want || got.Done() != 2 {
		t.Errorf("Counts = %+v (Done %d), want %+v (Done 2)", got, got.Done(), want)
	}
}

func TestGuardUnlimited(t *testing.T) {
	g := &tally.Guard{Allow: -1}
	for i := range 100 {
		if _, err := g.Admit(context.Background()); err != nil {
			t.Fatalf("Admit %d: %v", i+1, err)
		}
	}
}

// refuseAll is a guard that rejects every attempt.
type refuseAll struct{ done int }

func (r *refuseAll) Admit(context.Context) (uint64, error)           { return 0, guardtest.ErrBoom }
func (r *refuseAll) Done(context.Context, uint64, admission.Outcome) { r.done++ }

// An Inner guard decides every admission and hears every outcome.
func TestGuardInner(t *testing.T) {
	ctx := context.Background()
	inner := &refuseAll{}
	g := &tally.Guard{Inner: inner}
	if _, err := g.Admit(ctx); err != guardtest.ErrBoom {
		t.Fatalf("Admit: %v, want the inner guard's %v", err, guardtest.ErrBoom)
	}
	g.Done(ctx, 0, guardtest.Abandoned)
	if inner.done != 1 {
		t.Errorf("the inner guard heard %d outcomes, want 1", inner.done)
	}
	if got, want := g.Counts(), (tally.GuardCounts{Rejected: 1, Abandoned: 1}); got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}

func TestBudget(t *testing.T) {
	b := &tally.Budget{Allow: 1}
	if !b.Withdraw(failure.Transient) || b.Withdraw(failure.Throttled) {
		t.Fatal("Allow 1: want the first withdrawal granted, the second refused")
	}
	b.Refund(failure.Transient)
	b.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
	want := tally.BudgetCounts{Withdrawn: 1, Refused: 1, Refunded: 1,
		Classes: []failure.Class{failure.Transient, failure.Throttled},
		Records: []budget.Attempt{{N: 1, Failed: true, Class: failure.Transient}}}
	if diff := cmp.Diff(want, b.Counts()); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
}

// A gated Withdraw waits for the gate to close.
func TestBudgetGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &tally.Budget{Allow: -1, Gate: make(chan struct{})}
		done := make(chan bool, 1)
		go func() { done <- b.Withdraw(failure.Transient) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Withdraw returned before the gate closed")
		default:
		}
		close(b.Gate)
		if !await.Recv(t, done, "the gated Withdraw") {
			t.Error("Withdraw refused with Allow -1")
		}
	})
}
