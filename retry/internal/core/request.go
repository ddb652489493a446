package core

import (
	"context"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// Request is engine.Request, which documents it.
type Request struct {
	p       *Policy
	ctx     context.Context // the context it was admitted with, for the guards
	tickets tickets         // the guards' tickets
	isCopy  bool            // a copy of an attempt, paid for as a transient retry
	open    bool            // admitted, not yet ended
}

// Admit is engine.AdmitRequest, admitting r, a zero Request, in place.
func (r *Request) Admit(ctx context.Context, p *Policy, isCopy bool) error {
	r.p, r.ctx, r.isCopy = p, ctx, isCopy
	if isCopy && !p.budget.Withdraw(failure.Transient) {
		return &Error{Reason: ErrBudgetExhausted}
	}
	if gs := p.guards; len(gs) != 0 {
		ts := r.tickets.of(len(gs))
		if n, err := admitGuards(ctx, gs, ts); err != nil {
			tellGuards(ctx, gs[:n], ts, admission.Outcome{Abandoned: true})
			r.refund()
			reason, cause := rejectedBy(ctx, err)
			return &Error{Reason: reason, Cause: cause}
		}
	}
	if p.tracker != nil {
		p.tracker.Start(r.attempt())
	}
	r.open = true
	return nil
}

// attempt is how the budget hears of r: a request of its own is a call's
// first attempt; a copy is never a call's first request, and was paid for
// as a transient retry.
func (r *Request) attempt() budget.Attempt {
	if r.isCopy {
		return budget.Attempt{N: 2, Charged: failure.Transient}
	}
	return budget.Attempt{N: 1}
}

// End is engine.Request.End.
func (r *Request) End(err error) {
	if !r.open {
		return
	}
	r.open = false
	a := r.attempt()
	if err == nil {
		if len(r.p.guards) != 0 {
			r.tellAll(admission.Outcome{})
		}
		r.p.budget.Record(a)
		return
	}
	m := inspect(err)
	if m.has(rejectedMark) {
		r.abandon(err)
		return
	}
	a.Failed, a.Class = true, m.class(r.p.classifier, err)
	r.tellAll(admission.Outcome{Err: err, Class: a.Class})
	r.p.budget.Record(a)
}

// Abandon is engine.Request.Abandon.
func (r *Request) Abandon() {
	if r.open {
		r.open = false
		r.abandon(nil)
	}
}

// Cancel is engine.Request.Cancel.
func (r *Request) Cancel() {
	if r.open {
		r.open = false
		r.abandon(nil)
		if r.p.tracker == nil {
			// A budget that tracks requests in flight gave the copy's
			// retry back when it heard the request end.
			r.refund()
		}
	}
}

// abandon tells the guards and a budget that tracks requests in flight
// that r ended without a result the dependency can be judged by.
func (r *Request) abandon(err error) {
	r.tellAll(admission.Outcome{Err: err, Abandoned: true})
	if r.p.tracker != nil {
		r.p.tracker.Abandon(r.attempt())
	}
}

// refund gives a copy's cost back to a budget that can take it.
func (r *Request) refund() {
	if !r.isCopy {
		return
	}
	if rf, ok := r.p.budget.(budget.Refunder); ok {
		rf.Refund(failure.Transient)
	}
}

// tellAll tells every guard that admitted r how it ended.
func (r *Request) tellAll(o admission.Outcome) {
	if n := len(r.p.guards); n != 0 {
		tellGuards(r.ctx, r.p.guards, r.tickets.of(n), o)
	}
}
