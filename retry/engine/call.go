package engine

import (
	"context"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/internal/core"
)

// Call is the retry state of one call: the per-call state machine that
// retry.Policy.Do, retry.DoValue, the simulator in package sim and the HTTP
// transport in package unherdhttp all drive. Start one with
// [Begin], then for every attempt:
//
//  1. Admit before the attempt starts. It asks the guards (breakers,
//     throttles); a local rejection ends the call, and a retry already
//     withdrawn from the budget for this attempt is refunded.
//  2. Make the attempt.
//  3. Done with its error (nil for a success), the current time, the
//     caller's deadline and a random draw. Done tells the guards and the
//     budget how the attempt ended and returns a [Decision]: stop with a
//     reason, or wait Decision.Delay and go back to 1.
//
// If the caller gives up (its context ends) during an attempt or a wait,
// call Cancel instead of Done: the guards hear that the attempt was
// abandoned, the budget hears nothing, and a withdrawn retry is refunded.
//
// A Call owns everything a call carries between attempts: the attempt
// count, the previous delay (for decorrelated jitter), the class its last
// retry was charged as (a token bucket refunds by it), the guards' tickets
// and the budget's record of every attempt, successes and failures alike.
// Admit, Done, Cancel and Err never sleep, never read a clock and never
// draw a random number: time and randomness are arguments, so a simulator
// can drive them under virtual time. Guards may read their own clocks,
// and a guard that waits (a rate limiter) waits inside Admit.
//
// A driver that makes its attempts in real time uses the layer over Done
// instead, as DoValue and the gRPC and HTTP clients do: run each admitted
// attempt between [StartAttempt] and [Attempt.End] (its context,
// timeout and latency samples), then call [Call.Succeeded], or
// [Call.Failed], which reads the clock, draws, and waits before the next
// attempt:
//
//	c := engine.Begin(ctx, p)
//	for {
//		if err := c.Admit(ctx); err != nil {
//			return err
//		}
//		a := engine.StartAttempt(ctx, p)
//		err := a.End(op(a.Context()))
//		if err == nil {
//			c.Succeeded()
//			return nil
//		}
//		if err := c.Failed(ctx, err); err != nil {
//			return err
//		}
//	}
//
// Every step must be taken, in that order, exactly once per attempt; a
// failure reported for an attempt that was not admitted panics, since the
// call would otherwise never count an attempt. A protocol of one's own is
// safer driven by retry.Policy.Attempts, whose loop takes every step.
//
// A Call is a value, used by one goroutine for one call. The zero Call is
// not usable; call Begin. Making one allocates nothing, and neither
// does a call whose first attempt succeeds.
type Call struct {
	c core.Call
}

// Decision is what [Call.Done] decided: stop with Reason, or wait Delay
// and make another attempt. After a success it is the zero Decision.
type Decision struct {
	// Reason is nil when the call goes on (after a failure) or has
	// succeeded; otherwise it is the sentinel error that ends the call
	// (retry.ErrAttemptsExhausted, retry.ErrBudgetExhausted, ...).
	// [Call.Err] turns it into the call's error.
	Reason error
	// Delay is the wait before the next attempt. With a Reason, it is the
	// wait the schedule had computed when the deadline, the budget or the
	// server's delay stopped the call (zero when it stopped earlier), or,
	// with Wait, the wait before returning.
	Delay time.Duration
	// Wait is true when the caller should wait Delay before it returns the
	// call's error: the budget refused the retry and
	// Config.OnBudgetExhausted is not ReturnAtOnce.
	Wait bool
	// Class is how the failed attempt was classified.
	Class failure.Class
}

// Begin starts a call of p. Whether it is nested comes from ctx: a call
// made with a context that retry.WithOuterRetry marked, while serving a
// caller that retries on its own, makes Config.NestedAttempts attempts
// instead of MaxAttempts.
func Begin(ctx context.Context, p *retry.Policy) (c Call) {
	// Set in place: a Call built and then returned is zeroed and copied
	// more than once.
	c.c.Start((*core.Policy)(p), core.HasOuterRetry(ctx))
	return c
}

// AttemptLimit returns how many attempts, counting the first, a call of p
// made with ctx may make: Config.NestedAttempts if ctx says an outer
// layer retries (retry.WithOuterRetry), MaxAttempts otherwise.
func AttemptLimit(ctx context.Context, p *retry.Policy) int {
	return (*core.Policy)(p).AttemptLimit(core.HasOuterRetry(ctx))
}

// Attempts returns the number of attempts admitted so far, counting one in
// flight.
func (c *Call) Attempts() int { return c.c.Attempts() }

// Admit asks to start the next attempt. It consults the guards in order;
// if one rejects, the guards that had admitted it hear that it was
// abandoned, the retry withdrawn for it (if any) is refunded, and Admit
// returns the call's *Error: retry.ErrRejected, with the guard's error as Cause,
// or retry.ErrCancelled if ctx ended while a guard waited. A local rejection is
// never retried. ctx is only handed to the guards.
func (c *Call) Admit(ctx context.Context) error { return c.c.Admit(ctx) }

// Done reports how the admitted attempt ended and decides what follows.
// err is nil for a success. now is the current time and deadline the
// caller's (zero for none): a wait that would end at or after deadline is
// not started. draw is a uniformly random 64-bit number for the jitter.
// After a success, now, deadline and draw are not used.
//
// On a failure Done takes these steps, in this order, and the first that
// stops the call gives the Reason:
//
//  1. An error that is a local rejection (errors.Is(err, retry.ErrRejected): a
//     breaker used inside the operation, an inner Policy's rejection)
//     stops with retry.ErrRejected; guards hear the attempt was abandoned, the
//     budget hears nothing.
//  2. Classify err (Config.Classify, else DefaultClassify); tell the
//     guards and the budget about the failure and its class.
//  3. Permanent stops with retry.ErrPermanent; an error judged Final,
//     or one that is retry.ErrFinal, stops with retry.ErrFinal.
//  4. No attempts left (MaxAttempts, or NestedAttempts for a nested call)
//     stops with retry.ErrAttemptsExhausted.
//  5. The delay: the schedule's jittered delay for this retry (from the
//     throttled base for a Throttled failure), or, if longer, the
//     server-directed delay the error carries (a RetryAfter method) with
//     ServerJitter on top; a server delay above MaxServerDelay stops with
//     retry.ErrServerDelayTooLong, unless ClampServerDelay is set.
//  6. A wait that would end at or after the deadline stops with
//     retry.ErrDeadline.
//  7. Withdraw the retry from the budget; an empty budget stops with
//     retry.ErrBudgetExhausted (unless Config.OnBudgetExhausted is
//     ReturnAtOnce, the Decision asks the caller to wait first; see
//     Decision.Wait).
//  8. Tell the observer (observe.Retry) and return the delay.
//
// When it stops the call, Done tells the observer first (observe.GiveUp).
func (c *Call) Done(now, deadline time.Time, err error, draw uint64) Decision {
	return Decision(c.c.Done(now, deadline, err, draw))
}

// Cancel ends the call because the caller gave up: its context ended
// during an attempt (err is that attempt's error) or during a wait (err is
// nil). An attempt in flight is reported to the guards as abandoned, the
// budget is told nothing, and a retry withdrawn and not yet made is
// refunded. It returns the call's *Error, retry.ErrCancelled with cause (usually
// context.Cause of the caller's context).
func (c *Call) Cancel(err, cause error) error { return c.c.Cancel(err, cause) }

// Err returns the call's error for a Decision that stops it: an [*Error]
// with d.Reason, the attempts made and the last attempt's error. It
// returns nil for a Decision without a Reason.
func (c *Call) Err(d Decision) error { return c.c.Err(core.Decision(d)) }

// Failed reports the failure of the attempt in flight and waits for the
// next one: the real-time step over [Call.Done] that every driver of a
// Call takes after a failed attempt. err is the attempt's error, as
// [Attempt.End] returned it. Failed returns nil when the next attempt may
// start (go back to [Call.Admit]), or the call's error ([*Error]) when the
// call has ended.
//
//   - If ctx has ended, the caller gave up, which says nothing about the
//     dependency: Failed returns [Call.Cancel]'s error.
//   - After the first attempt, a ctx that carries retry.WithOuterRetry makes
//     the call nested: NestedAttempts replaces MaxAttempts.
//   - Done decides, with the current time only when ctx has a deadline
//     (the clock is not read otherwise) and a draw from Config.Rand, or
//     from math/rand/v2 without one.
//   - The wait the Decision asks for, never past ctx's deadline (Done
//     does not start one that would end at or after it), is cut short
//     when ctx ends; a wait cut short cancels the call.
//
// The waits of one call share one timer, from a pool shared by all calls
// and given back when the call ends (here, or in [Call.Succeeded],
// [Call.Cancel] or a rejection by [Call.Admit]); a zero delay arms no
// timer.
//
//go:noinline
func (c *Call) Failed(ctx context.Context, err error) error { return c.c.Failed(ctx, err) }

// Succeeded reports that the attempt in flight succeeded, which ends the
// call: what [Call.Done] does for a nil error, and the call's wait timer,
// if it had one, goes back to the pool.
func (c *Call) Succeeded() { c.c.Succeeded() }

// DefaultClassify is the classification a retry.Policy uses when
// Config.Classify is nil, whose doc lists its rules; a custom classifier
// can fall back to it for errors it does not recognise.
func DefaultClassify(err error) failure.Class { return core.DefaultClassify(err) }

// NewRejection returns a new sentinel error with the given message that
// errors.Is matches to retry.ErrRejected. Guards (breaker.ErrOpen,
// throttle.ErrThrottled) define their rejections with it, so that the
// retry loop never retries a local rejection, even when it reaches the
// loop as the operation's own error (a breaker used through its Allow
// method inside the operation, or an inner Policy's *Error).
func NewRejection(msg string) error { return core.NewRejection(msg) }

// HasOuterRetry reports whether ctx carries the mark of
// retry.WithOuterRetry: the call is made while serving a caller that
// retries on its own.
func HasOuterRetry(ctx context.Context) bool { return core.HasOuterRetry(ctx) }
