package retry

import (
	"math"
	"math/bits"
	"time"

	"github.com/unherd/unherd/budget"
)

// Step is the input to [Policy.Decide]: everything the retry decision
// depends on, so the decision needs no clock, no context and no sleep.
type Step struct {
	// Attempt is the number of attempts made so far, including the one
	// that just failed (1 after the first attempt).
	Attempt int
	// Err is the failed attempt's error; it must not be nil.
	Err error
	// CallerDone is the caller's context error (ctx.Err()), or nil while
	// the caller is still waiting. A done caller always stops the loop.
	CallerDone error
	// Nested is true when an outer layer already retries (see
	// WithOuterRetry): NestedAttempts replaces MaxAttempts.
	Nested bool
	// Now is the current time and Deadline the caller's deadline (zero for
	// none). A wait that would end after Deadline is not started.
	Now, Deadline time.Time
	// Prev is the previous delay, for decorrelated jitter; zero before the
	// first retry.
	Prev time.Duration
	// Charged is the class the previous retry was withdrawn as (meaningful
	// when Attempt > 1); budgets refund by it.
	Charged Class
	// Rand is a uniformly random 64-bit draw.
	Rand uint64
}

// Decision is the outcome of [Policy.Decide]: stop with Reason, or wait
// Delay and try again.
type Decision struct {
	// Reason is nil to retry, or the sentinel error that ends the call.
	Reason error
	// Delay is the wait before the next attempt, when retrying.
	Delay time.Duration
	// Class is how the failure was classified.
	Class Class
}

// Decide is the retry decision for one failed attempt, in DESIGN order:
// classify the error (caller cancelled, permanent, throttled, timeout,
// transient); stop if it is permanent or marked final; stop if no attempts
// are left; take the server-directed delay
// or the schedule's; stop if the wait would end past the deadline; finally
// withdraw from the budget, stopping if it is empty. It tells the budget
// how the attempt ended (unless the caller gave up, which says nothing
// about the dependency). Do is a loop around Decide; the simulator calls
// it directly under virtual time.
func (p *Policy) Decide(s Step) Decision { return p.decide(&s, nil) }

// failure is what the decision needs to know about a failed attempt's
// error: its class and the marks that steer the loop. The guarded loop
// fills it in when it classifies the attempt for the guards, so that the
// decision does not walk and classify the same error again; known is false
// when nothing has been filled in. Without guards the loop passes none
// (nil), so that DoValue's first-attempt path never has to zero one.
type failure struct {
	serverDelay ServerDelay
	class       Class
	final       bool
	known       bool
}

// failureOf is err's failure, given its marks (of an error that was not
// rejected locally).
func (p *Policy) failureOf(m *marks, err error) failure {
	return failure{serverDelay: m.serverDelay, class: m.class(p.classifier, err), final: m.final, known: true}
}

// decide is Decide on pointers: the retry loop builds its Step in place
// rather than copying a dozen words per failed attempt, and hands over the
// failure the guards' report already classified, if any.
func (p *Policy) decide(s *Step, f *failure) Decision {
	if s.CallerDone != nil {
		return Decision{Reason: ErrCancelled, Class: Transient}
	}
	if f == nil || !f.known {
		// Not classified yet: no guards, or a local rejection, which
		// the guards' report leaves to this check.
		m := inspect(s.Err)
		if m.rejected {
			// A local rejection says nothing about the dependency: no
			// budget record, no retry.
			return Decision{Reason: ErrRejected, Class: Permanent}
		}
		own := p.failureOf(&m, s.Err)
		f = &own
	}
	c := f.class
	if p.budget != nil {
		p.budget.Record(budget.Attempt{N: s.Attempt, Failed: true, Class: c, Charged: s.Charged})
	}
	if c == Permanent {
		return Decision{Reason: ErrPermanent, Class: c}
	}
	if f.final {
		return Decision{Reason: ErrFinal, Class: c}
	}
	max := p.maxAttempts
	if s.Nested {
		max = p.nestedAttempts
	}
	if s.Attempt >= max {
		return Decision{Reason: ErrAttemptsExhausted, Class: c}
	}
	d, ok, tooLong := p.serverDelay(f.serverDelay, s.Rand)
	if tooLong {
		return Decision{Reason: ErrServerDelayTooLong, Delay: d, Class: c}
	}
	if !ok {
		if c == Throttled {
			d = p.backoff.ThrottledDelay(s.Attempt-1, s.Prev, s.Rand)
		} else {
			d = p.backoff.Delay(s.Attempt-1, s.Prev, s.Rand)
		}
	}
	// A wait that ends exactly at the deadline is not started either: the
	// attempt after it would have no time at all.
	if !s.Deadline.IsZero() && s.Deadline.Sub(s.Now) <= d {
		return Decision{Reason: ErrDeadline, Delay: d, Class: c}
	}
	if p.budget != nil && !p.budget.Withdraw(c) {
		return Decision{Reason: ErrBudgetExhausted, Delay: d, Class: c}
	}
	return Decision{Delay: d, Class: c}
}

// serverDelay returns the server-directed delay sd carries, with up
// to ServerJitter of it added on top (saturating, never negative). tooLong
// reports a request above MaxServerDelay: the loop stops rather than come
// back before the server allowed.
func (p *Policy) serverDelay(sd ServerDelay, u uint64) (d time.Duration, ok, tooLong bool) {
	if sd == nil {
		return 0, false, false
	}
	d = max(sd.RetryAfter(), 0)
	if d > p.maxServerDelay {
		return d, true, true
	}
	// The schedule may have used u's high bits; take the jitter from its
	// bits rotated, scaled to [0, ServerJitter*d].
	var j time.Duration = math.MaxInt64
	if jf := float64(d) * p.serverJitter; jf < math.MaxInt64 {
		j = time.Duration(jf)
	}
	hi, _ := bits.Mul64(bits.RotateLeft64(u, 32), uint64(j)+1)
	if time.Duration(hi) > math.MaxInt64-d {
		return math.MaxInt64, true, false
	}
	return d + time.Duration(hi), true, false
}
