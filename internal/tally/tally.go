// Package tally holds a guard and a budget that count what they are
// asked, for the tests that check how the retry loop and hedges use the
// guards and the budget they are given: every ticket handed out comes
// back, every retry withdrawn is made or refunded, every attempt is
// recorded as what it was.
package tally

import (
	"context"
	"slices"
	"sync"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry/engine"
)

// ErrRejected is the rejection of a Guard without an Inner guard past
// its Allow admissions. It matches retry.ErrRejected.
var ErrRejected = engine.NewRejection("tally: rejected")

// Guard is an admission.Guard that counts what it hears. If Inner is set,
// Inner decides every admission and hears every outcome; else Guard
// admits the first Allow attempts (every one if Allow < 0) and rejects
// the rest with ErrRejected. Safe for concurrent use.
type Guard struct {
	Inner admission.Guard
	Allow int

	mu     sync.Mutex
	counts GuardCounts
}

// GuardCounts is what a Guard has heard: the admissions it granted and
// refused, and how each admitted attempt ended.
type GuardCounts struct {
	Admitted, Rejected           int
	Succeeded, Failed, Abandoned int
}

// Done is how many admitted attempts the guard has heard the end of.
func (c GuardCounts) Done() int { return c.Succeeded + c.Failed + c.Abandoned }

// Admit implements admission.Guard.
func (g *Guard) Admit(ctx context.Context) (uint64, error) {
	if g.Inner != nil {
		t, err := g.Inner.Admit(ctx)
		g.mu.Lock()
		defer g.mu.Unlock()
		if err != nil {
			g.counts.Rejected++
		} else {
			g.counts.Admitted++
		}
		return t, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Allow >= 0 && g.counts.Admitted >= g.Allow {
		g.counts.Rejected++
		return 0, ErrRejected
	}
	g.counts.Admitted++
	return uint64(g.counts.Admitted), nil
}

// Done implements admission.Guard.
func (g *Guard) Done(ctx context.Context, t uint64, o admission.Outcome) {
	g.mu.Lock()
	switch {
	case o.Abandoned:
		g.counts.Abandoned++
	case o.Err != nil:
		g.counts.Failed++
	default:
		g.counts.Succeeded++
	}
	g.mu.Unlock()
	if g.Inner != nil {
		g.Inner.Done(ctx, t, o)
	}
}

// Counts returns what g has heard so far.
func (g *Guard) Counts() GuardCounts {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.counts
}

// Budget is a budget.Budget and budget.Refunder that counts what it is
// asked. It grants the
// first Allow withdrawals (every one if Allow < 0) and refuses the rest;
// if Gate is set, each Withdraw first waits for it to close. Safe for
// concurrent use.
type Budget struct {
	Allow int
	Gate  chan struct{}

	mu     sync.Mutex
	counts BudgetCounts
}

// BudgetCounts is what a Budget has been asked.
type BudgetCounts struct {
	// Withdrawn and Refused count the withdrawals granted and refused,
	// Refunded the refunds.
	Withdrawn, Refused, Refunded int
	// Classes holds the class of every withdrawal asked for, in order.
	Classes []failure.Class
	// Records holds every attempt recorded, in order.
	Records []budget.Attempt
}

// Withdraw implements budget.Budget.
func (b *Budget) Withdraw(c failure.Class) bool {
	if b.Gate != nil {
		<-b.Gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts.Classes = append(b.counts.Classes, c)
	if b.Allow >= 0 && b.counts.Withdrawn >= b.Allow {
		b.counts.Refused++
		return false
	}
	b.counts.Withdrawn++
	return true
}

// Refund implements budget.Refunder.
func (b *Budget) Refund(failure.Class) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts.Refunded++
}

// Record implements budget.Budget.
func (b *Budget) Record(a budget.Attempt) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts.Records = append(b.counts.Records, a)
}

// Counts returns what b has been asked so far.
func (b *Budget) Counts() BudgetCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.counts
	c.Classes, c.Records = slices.Clone(c.Classes), slices.Clone(c.Records)
	return c
}
