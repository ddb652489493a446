package retry

import (
	"context"
	"time"

	"github.com/unherd/unherd/internal/lazyctx"
)

// runAttempt runs fn once, under the per-attempt timeout if there is one.
// An attempt whose own timeout expired (not the caller's) has its error
// wrapped with ErrAttemptTimeout, so it classifies as a Timeout.
//
// A failed attempt's context is cancelled when fn returns. A successful
// one's is not: its timeout is stopped and it is released from the
// caller's context, so that what fn returns (a response body, *sql.Rows)
// stays usable after DoValue returns, and nothing is left registered with
// the caller's context, however long that lives; from then on it reports
// no deadline, since it has none.
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
// timeout, whichever is first; see runAttempt for its lifetime. The
// context costs one allocation until fn watches it (see lazyctx): an
// attempt that returns without asking for Done arms no timer and leaves
// ctx alone.
func runBounded[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	a := lazyctx.WithTimeout(ctx, timeout, ErrAttemptTimeout)
	v, err := fn(a)
	if err != nil {
		// Err looks at the clock if nothing has ended the attempt yet: an
		// attempt that failed at its own deadline (a socket deadline
		// taken from it, say) timed out even if nobody watched Done.
		if ctx.Err() == nil && a.Err() != nil && a.Expired() {
			err = &timeoutError{err}
		}
		a.Cancel(nil)
		return v, err
	}
	a.Detach()
	return v, nil
}

// timeoutError marks an attempt that its per-attempt timeout ended.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string   { return ErrAttemptTimeout.Error() + ": " + e.err.Error() }
func (e *timeoutError) Unwrap() []error { return []error{ErrAttemptTimeout, e.err} }
func (e *timeoutError) Timeout() bool   { return true }
