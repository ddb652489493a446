package retry

import (
	"context"
	"time"

	"github.com/unherd/unherd/internal/lazyctx"
)

// Attempt is one attempt of a call, from [Policy.StartAttempt] to
// [Attempt.End]: its context, bounded by the policy's per-attempt
// timeout, and its start, for the policy's [TimeoutSource]. Every driver
// of a [Call] that makes attempts in real time (DoValue, the gRPC and
// HTTP clients, a hand-made protocol) runs each one between these two
// calls, so the timeout, the latency samples and the marking of a
// timed-out attempt are the same everywhere.
//
// An Attempt is a value used by one goroutine; the zero Attempt is not
// usable. An attempt under a policy without a timeout or a TimeoutSource
// costs nothing: its context is the caller's, and End returns err as it
// is. With a timeout, it costs one allocation until something watches its
// context's Done channel, and no timer before that.
type Attempt struct {
	parent context.Context  // the caller's
	bound  *lazyctx.Context // the attempt's own context, if it has a timeout
	ts     TimeoutSource    // to tell the latency, or nil
	start  time.Time        // when the attempt started, if ts is set
	kept   bool             // Commit was called
}

// StartAttempt starts an attempt under ctx, the caller's context. Its
// context ([Attempt.Context]) ends when ctx does or after the attempt
// timeout: Config.Timeouts' AttemptTimeout, read now, or else
// Config.AttemptTimeout (none if not positive). Report how the attempt
// ended with [Attempt.End].
func (p *Policy) StartAttempt(ctx context.Context) Attempt {
	if p.timeouts == nil && p.attemptTimeout <= 0 {
		return Attempt{parent: ctx}
	}
	return p.startBounded(ctx)
}

// startBounded is StartAttempt with a timeout or a TimeoutSource, apart
// so that StartAttempt inlines.
func (p *Policy) startBounded(ctx context.Context) Attempt {
	a := Attempt{parent: ctx}
	timeout := p.attemptTimeout
	if p.timeouts != nil {
		a.ts = p.timeouts
		timeout = a.ts.AttemptTimeout()
		a.start = time.Now()
	}
	if timeout > 0 {
		a.bound = lazyctx.WithTimeout(ctx, timeout, ErrAttemptTimeout)
	}
	return a
}

// Context returns the attempt's context: the caller's, bounded by the
// attempt timeout. Its cause (context.Cause) is ErrAttemptTimeout once
// the timeout has ended it.
func (a *Attempt) Context() context.Context {
	if a.bound != nil {
		return a.bound
	}
	return a.parent
}

// End reports how the attempt ended, err being nil for a success, and
// returns the error to hand to [Call.Failed] (nil for a success). It
// tells the TimeoutSource the attempt's latency and whether it
// succeeded. An error of an attempt that its own timeout ended (not the
// caller's context) comes back wrapped with ErrAttemptTimeout, so it
// classifies as a Timeout; any other comes back as it is.
//
// A failed attempt's context is cancelled. A successful one's is not: its
// timeout is stopped and, unless [Attempt.Commit] was called, it is
// released from the caller's context, so that what the attempt returned
// (a response body, *sql.Rows) stays usable after the call returns and
// nothing stays registered with the caller's context; from then on it
// reports no deadline. Call End once.
func (a *Attempt) End(err error) error {
	if a.bound == nil && a.ts == nil {
		return err
	}
	return a.end(err)
}

// end is End for an attempt with a timeout or a TimeoutSource.
func (a *Attempt) end(err error) error {
	if a.ts != nil {
		a.ts.Observe(time.Since(a.start), err == nil)
	}
	b := a.bound
	if b == nil {
		return err
	}
	if err != nil {
		// Err looks at the clock if nothing has ended the attempt yet: an
		// attempt that failed at its own deadline (a socket deadline
		// taken from it, say) timed out even if nobody watched Done.
		if a.parent.Err() == nil && b.Err() != nil && b.Expired() {
			err = &timeoutError{err}
		}
		b.Cancel(nil)
		return err
	}
	if !a.kept {
		b.Detach()
	}
	return nil
}

// Commit marks the point after which the attempt's result outlives its
// timeout but not the caller's context: a stream that will no longer be
// retried. It stops the attempt timeout; the attempt's context then ends
// only with the caller's, or when a failed End cancels it. End must still
// be called when the attempt's outcome is known (a stream's first answer
// or its failure); it tells the TimeoutSource as usual, and after Commit
// a successful End leaves the context following the caller's.
func (a *Attempt) Commit() {
	a.kept = true
	if a.bound != nil {
		a.bound.StopDeadline()
	}
}

// runAttempt runs fn once, between StartAttempt and End. An attempt
// without a timeout or a TimeoutSource takes StartAttempt's first path,
// spelled out: there the Attempt would only be built to be copied, and
// the copy (wide loads just after the narrow stores that built it)
// stalled DoValue's first attempt for longer than the rest of it.
func runAttempt[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	if p.timeouts == nil && p.attemptTimeout <= 0 {
		return fn(ctx)
	}
	a := p.startBounded(ctx)
	v, err := fn(a.Context())
	return v, a.End(err)
}

// timeoutError marks an attempt that its per-attempt timeout ended.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string   { return ErrAttemptTimeout.Error() + ": " + e.err.Error() }
func (e *timeoutError) Unwrap() []error { return []error{ErrAttemptTimeout, e.err} }
func (e *timeoutError) Timeout() bool   { return true }
