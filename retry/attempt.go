package retry

import (
	"context"
	"time"
)

// runAttempt runs fn once, under the per-attempt timeout if there is one.
// An attempt whose own timeout expired (not the caller's) has its error
// wrapped with ErrAttemptTimeout, so it classifies as a Timeout.
//
// A failed attempt's context is cancelled when fn returns. A successful
// one's is not: its timeout is stopped and it is released from the
// caller's context, so that what fn returns (a response body, *sql.Rows)
// stays usable after DoValue returns, and nothing is left registered with
// the caller's context, however long that lives.
func runAttempt[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	timeout := p.attemptTimeout
	if p.timeouts != nil {
		timeout = p.timeouts.AttemptTimeout()
	}
	if timeout <= 0 && p.timeouts == nil {
		return fn(ctx)
	}
	var start time.Time
	if p.timeouts != nil {
		start = time.Now()
	}
	var v T
	var err error
	if timeout > 0 {
		v, err = runBounded(ctx, timeout, fn)
	} else {
		v, err = fn(ctx)
	}
	if p.timeouts != nil {
		p.timeouts.Observe(time.Since(start), err == nil)
	}
	return v, err
}

// runBounded runs fn under a context that ends when ctx does or after
// timeout, whichever is first; see runAttempt for its lifetime.
func runBounded[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	a := &attemptContext{parent: ctx, deadline: time.Now().Add(timeout)}
	if d, ok := ctx.Deadline(); ok && d.Before(a.deadline) {
		a.deadline = d
	}
	// The attempt's cancellation is its own, over ctx's values but not
	// its cancellation (the part context.WithoutCancel would play, taken
	// by the same allocation), so that it can outlive ctx's hold on it;
	// ctx's end reaches it through an AfterFunc, which a success stops,
	// as it stops the timer.
	a.inner, a.cancel = context.WithCancelCause((*attemptValues)(a))
	end := a.end // one func value for both
	var stop func() bool
	if ctx.Done() != nil { // a context that can end
		stop = context.AfterFunc(ctx, end)
	}
	timer := time.AfterFunc(timeout, end)
	v, err := fn(a)
	timer.Stop()
	if stop != nil {
		stop()
	}
	if err != nil {
		if ctx.Err() == nil && context.Cause(a.inner) == ErrAttemptTimeout {
			err = &timeoutError{err}
		}
		a.cancel(nil)
	}
	return v, err
}

// attemptContext is the context of an attempt under a per-attempt
// timeout: a cancellation of its own (inner), with the attempt's deadline
// (the earlier of the caller's and the attempt timeout's) reported.
type attemptContext struct {
	parent   context.Context // the caller's
	deadline time.Time
	inner    context.Context // a cancelCtx over (*attemptValues)(the same struct)
	cancel   context.CancelCauseFunc
}

// end cancels the attempt: with the caller's cause if the caller's
// context has ended, or else because the attempt timed out.
func (c *attemptContext) end() {
	if c.parent.Err() != nil {
		c.cancel(context.Cause(c.parent))
		return
	}
	c.cancel(ErrAttemptTimeout)
}

func (c *attemptContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *attemptContext) Done() <-chan struct{}       { return c.inner.Done() }

// Value looks up key in the attempt's own cancellation first, which is
// how contexts derived from the attempt's find it and register with it
// directly, then in the caller's values.
func (c *attemptContext) Value(key any) any { return c.inner.Value(key) }

// Err reports a context that ended at a deadline, the attempt's or the
// caller's, as context.DeadlineExceeded, as a context with a deadline
// does.
func (c *attemptContext) Err() error {
	err := c.inner.Err()
	if err != nil {
		if cause := context.Cause(c.inner); cause == ErrAttemptTimeout || cause == context.DeadlineExceeded {
			return context.DeadlineExceeded
		}
	}
	return err
}

// attemptValues is the parent of an attempt's own cancellation: the
// caller's values and the attempt's deadline, without the caller's
// cancellation.
type attemptValues attemptContext

func (c *attemptValues) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *attemptValues) Done() <-chan struct{}       { return nil }
func (c *attemptValues) Err() error                  { return nil }
func (c *attemptValues) Value(key any) any           { return c.parent.Value(key) }

// timeoutError marks an attempt that its per-attempt timeout ended.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string   { return ErrAttemptTimeout.Error() + ": " + e.err.Error() }
func (e *timeoutError) Unwrap() []error { return []error{ErrAttemptTimeout, e.err} }
func (e *timeoutError) Timeout() bool   { return true }
