package core

import (
	"context"
	"math/bits"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
)

// Call is engine.Call, which documents it.
type Call struct {
	p       *Policy
	last    error         // the last attempt's error
	prev    time.Duration // the last retry's delay
	attempt int           // attempts admitted so far
	max     int           // the attempt limit: MaxAttempts or NestedAttempts
	charged failure.Class // the class the last retry was withdrawn as
	state   callState
	tickets tickets         // the guards' tickets
	waited  time.Duration   // the retries' delays so far, for the observer
	ctx     context.Context // the latest Admit's context, for the observer and the guards
	w       waiter          // the timer of Failed's waits, if any
}

// callState is where a Call stands between its methods.
type callState uint8

const (
	idle    callState = iota // before the first attempt, or stopped
	running                  // an attempt was admitted and not yet reported
	paid                     // a retry was withdrawn and its attempt not yet admitted
)

// Decision is engine.Decision.
type Decision struct {
	Reason error
	Delay  time.Duration
	Wait   bool
	Class  failure.Class
}

// Begin starts a call; see engine.Begin.
func (p *Policy) Begin(nested bool) (c Call) {
	c.Start(p, nested)
	return c
}

// Start makes c, a zero Call, a call of p: Begin for a Call that is
// already in place.
func (c *Call) Start(p *Policy, nested bool) {
	c.p, c.max = p, p.AttemptLimit(nested)
}

// Attempts is engine.Call.Attempts.
func (c *Call) Attempts() int { return c.attempt }

// Admit is engine.Call.Admit.
func (c *Call) Admit(ctx context.Context) error {
	if c.p.hooked {
		return c.admitSlow(ctx)
	}
	c.attempt++
	c.state = running
	return nil
}

// admitSlow is Admit with guards to ask or an observer to tell. It is not
// inlined, so that Admit stays small enough to inline without them.
//
//go:noinline
func (c *Call) admitSlow(ctx context.Context) error {
	c.ctx = ctx
	p := c.p
	if gs := p.guards; len(gs) != 0 {
		ts := c.tickets.of(len(gs))
		if n, err := admitGuards(ctx, gs, ts); err != nil {
			return c.rejected(ctx, ts[:n], err)
		}
	}
	c.attempt++
	c.state = running
	if p.tracker != nil {
		p.tracker.Start(budget.Attempt{N: c.attempt, Charged: c.charged})
	}
	if p.observer != nil {
		p.observer.Observe(c.obsCtx(), observe.Event{Kind: observe.Attempt, Attempt: c.attempt})
	}
	return nil
}

// obsCtx is the context the observer is told events with: the call's
// latest Admit's. Each event site calls the observer itself with an
// Event literal, so that the Event is built where the call passes it
// (bench/NOTES.md, "Hot-path layout").
func (c *Call) obsCtx() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// rejected ends the call whose next attempt a guard rejected with err:
// the guards that had admitted it, whose tickets are ts, hear that it was
// abandoned, and the retry withdrawn for it (if any) is refunded.
func (c *Call) rejected(ctx context.Context, ts []uint64, err error) error {
	c.w.release()
	tellGuards(ctx, c.p.guards[:len(ts)], ts, admission.Outcome{Abandoned: true})
	c.refund()
	reason, cause := rejectedBy(ctx, err)
	c.gaveUp(reason)
	return &Error{Reason: reason, Attempts: c.attempt, Last: c.last, Cause: cause}
}

// report tells the guards how the attempt in flight ended.
func (c *Call) report(o admission.Outcome) {
	if c.state != running {
		return
	}
	c.state = idle
	if len(c.p.guards) != 0 {
		c.tellGuards(o)
	}
}

// reportAbandoned reports the attempt in flight, which ended with err (nil
// if it did not end), as abandoned: to the guards, and to a budget that
// tracks attempts in flight, which hears of an attempt that ran to a
// result through Record instead.
func (c *Call) reportAbandoned(err error) {
	inFlight := c.state == running
	c.report(admission.Outcome{Err: err, Abandoned: true})
	if inFlight && c.p.tracker != nil {
		c.p.tracker.Abandon(budget.Attempt{N: c.attempt, Charged: c.charged})
	}
}

// tellGuards is report's part for a policy with guards, apart so that
// report inlines. The guards hear it with the context of the Admit that
// asked them (admitSlow keeps it: a policy with guards always takes that
// path).
func (c *Call) tellGuards(o admission.Outcome) {
	gs := c.p.guards
	tellGuards(c.ctx, gs, c.tickets.of(len(gs)), o)
}

// errNotAdmitted is the panic of a failure reported for an attempt that
// was never admitted.
var errNotAdmitted = newSentinel("retry/engine: an attempt's failure was reported without Call.Admit before it; admit every attempt, the first included")

// gaveUp tells the observer of a call that stops with reason.
func (c *Call) gaveUp(reason error) {
	if c.p.observer != nil {
		c.p.observer.Observe(c.obsCtx(), observe.Event{Kind: observe.GiveUp, Attempt: c.attempt, Err: c.last, Reason: reason,
			Stop: stopName(reason), Delay: c.waited})
	}
}

// stopName names a stop reason for the observer.
func stopName(reason error) observe.Stop {
	switch reason {
	case ErrAttemptsExhausted:
		return observe.StopAttemptsExhausted
	case ErrBudgetExhausted:
		return observe.StopBudgetExhausted
	case ErrDeadline:
		return observe.StopDeadline
	case ErrPermanent:
		return observe.StopPermanent
	case ErrFinal:
		return observe.StopFinal
	case ErrCancelled:
		return observe.StopCancelled
	case ErrRejected:
		return observe.StopRejected
	case ErrServerDelayTooLong:
		return observe.StopServerDelayTooLong
	}
	return observe.StopOther
}

// refund gives back a retry that was withdrawn and will not be made.
func (c *Call) refund() {
	if c.state != paid {
		return
	}
	c.state = idle
	if r, ok := c.p.budget.(budget.Refunder); ok {
		r.Refund(c.charged)
	}
}

// Done is engine.Call.Done.
func (c *Call) Done(now, deadline time.Time, err error, draw uint64) Decision {
	if err == nil {
		if c.p.hooked {
			c.succeededHooked()
		} else {
			c.succeeded()
		}
		return Decision{}
	}
	d := c.failed(now, deadline, err, draw)
	if d.Reason != nil {
		c.gaveUp(d.Reason)
	}
	return d
}

// succeeded tells the budget that the attempt in flight succeeded.
func (c *Call) succeeded() {
	c.state = idle
	c.p.budget.Record(budget.Attempt{N: c.attempt, Charged: c.charged})
}

// succeededHooked is succeeded when there are guards to tell or an
// observer.
func (c *Call) succeededHooked() {
	c.report(admission.Outcome{})
	c.succeeded()
	if c.p.observer != nil {
		c.p.observer.Observe(c.obsCtx(), observe.Event{Kind: observe.Success, Attempt: c.attempt, Delay: c.waited})
	}
}

// failed is Done's decision for a failure.
func (c *Call) failed(now, deadline time.Time, err error, draw uint64) Decision {
	if c.state != running {
		// Without Admit the attempt count never grows, and the call would
		// retry until its deadline: a driver's bug, caught here.
		panic(errNotAdmitted)
	}
	p := c.p
	c.last = err
	var m marks
	m.walk(err)
	if m.has(rejectedMark) {
		c.reportAbandoned(err)
		return Decision{Reason: ErrRejected, Class: failure.Permanent}
	}
	class := m.class(p.classifier, err)
	c.report(admission.Outcome{Err: err, Class: class})
	p.budget.Record(budget.Attempt{N: c.attempt, Failed: true, Class: class, Charged: c.charged})
	switch {
	case class == failure.Permanent:
		return Decision{Reason: ErrPermanent, Class: class}
	case m.has(finalMark):
		return Decision{Reason: ErrFinal, Class: class}
	case c.attempt >= c.max:
		return Decision{Reason: ErrAttemptsExhausted, Class: class}
	}
	d, tooLong := p.delay(c.attempt, c.prev, class, m.serverDelay, draw)
	if tooLong {
		return Decision{Reason: ErrServerDelayTooLong, Delay: d, Class: class}
	}
	// A wait that ends exactly at the deadline is not started either: the
	// attempt after it would have no time at all.
	if !deadline.IsZero() && deadline.Sub(now) <= d {
		return Decision{Reason: ErrDeadline, Delay: d, Class: class}
	}
	if !p.budget.Withdraw(class) {
		stop := Decision{Reason: ErrBudgetExhausted, Delay: d, Class: class}
		switch p.onExhausted {
		case WaitSchedule:
			// The wait keeps the pace of the retries left, in one draw
			// (at least a server's delay); step 6 found d to end before
			// the deadline, and so does the wait.
			stop.Delay, stop.Wait = p.remaining(c.attempt, c.max, class, d, m.serverDelay != nil, now, deadline, draw), true
		case WaitRetryDelay:
			// The wait is d, the delay the refused retry itself would have
			// waited (from the throttled base after a Throttled failure,
			// as the AWS long-polling rule says), which step 6 found to
			// end before the deadline.
			stop.Wait = true
		}
		return stop
	}
	c.prev, c.charged, c.state = d, class, paid
	c.waited += d
	if p.observer != nil {
		p.observer.Observe(c.obsCtx(), observe.Event{Kind: observe.Retry, Attempt: c.attempt, Err: err, Class: class, Delay: d})
	}
	return Decision{Delay: d, Class: class}
}

// remaining is WaitSchedule's wait for a call whose retry after attempt
// number attempt (of at most limit) the budget refused, with d the delay
// that retry would have waited: one draw u, with the schedule's jitter,
// from the mean of the capped delays of the retries left (from the
// throttled base after a throttling error), so that a caller that loops
// comes back at the pace at which the rest of the schedule would have
// retried, and callers refused together do not come back together. Full
// and decorrelated jitter draw uniformly from [0, mean], equal jitter
// from [mean/2, mean], no jitter waits the mean. A server's delay (the
// floor in d) is honoured: the wait is at least d when the failure named
// one (Retry-After). When the wait would end at or after the deadline it is drawn again,
// from u's other half, within [d, deadline), which step 6 found room for.
func (p *Policy) remaining(attempt, limit int, class failure.Class, d time.Duration, server bool, now, deadline time.Time, u uint64) time.Duration {
	s := p.backoff
	// The mean of the capped delays of the retries left, the refused one
	// included.
	mean := s.MeanTemp(attempt-1, limit-1, class == failure.Throttled)
	var w time.Duration
	switch s.Jitter {
	case backoff.None:
		w = mean
	case backoff.Equal:
		w = mean - mean/2 + backoff.Uniform(u, mean/2)
	default: // Full, Decorrelated
		w = backoff.Uniform(u, mean)
	}
	if server {
		w = max(w, d)
	}
	if !deadline.IsZero() {
		if room := deadline.Sub(now); w >= room {
			w = d + backoff.Uniform(bits.RotateLeft64(u, 32), room-1-d)
		}
	}
	return w
}

// Cancel is engine.Call.Cancel.
func (c *Call) Cancel(err, cause error) error {
	if err != nil {
		c.last = err
	}
	c.abandon(err)
	c.w.release()
	c.gaveUp(ErrCancelled)
	return &Error{Reason: ErrCancelled, Attempts: c.attempt, Last: c.last, Cause: cause}
}

// abandon reports an attempt in flight, which ended with err (nil if it
// did not end), as abandoned and refunds a retry not made.
func (c *Call) abandon(err error) {
	c.reportAbandoned(err)
	c.refund()
}

// Err is engine.Call.Err.
func (c *Call) Err(d Decision) error {
	if d.Reason == nil {
		return nil
	}
	return &Error{Reason: d.Reason, Attempts: c.attempt, Last: c.last}
}
