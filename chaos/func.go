package chaos

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/pause"
	"github.com/unherd/unherd/retry"
)

// Wrap returns fn with the Injector's faults: each call first waits the
// added latency (within ctx), then either fails with the injected fault,
// without calling fn, or calls fn. An injected status is a *StatusError,
// marked for package retry by failure.OfHTTPStatus, the table unherdhttp
// uses: a 429 or 503 is Throttled, a 4xx other than 408 and 429, or a
// 501, is Permanent; and a RetryAfter is a server-directed delay
// (retry.Judge with a Verdict that HasDelay).
func Wrap[T any](inj *Injector, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		var zero T
		d := inj.decide()
		if !pause.For(ctx, d.delay) {
			return zero, context.Cause(ctx)
		}
		switch d.kind {
		case injectError:
			return zero, injected(d.faults.Err)
		case injectReset:
			return zero, resetError()
		case injectStatus:
			return zero, statusError(d.faults)
		}
		return fn(ctx)
	}
}

// StatusError is the error Wrap returns for an injected status. It
// matches ErrInjected.
type StatusError struct {
	// StatusCode is the injected status.
	StatusCode int
	// RetryAfter is the delay the injected answer asked for; zero if none.
	RetryAfter time.Duration
}

// Error returns "chaos: injected fault: status " and the status line.
func (e *StatusError) Error() string {
	return ErrInjected.Error() + ": status " + strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
}

// Is reports whether target is ErrInjected.
func (e *StatusError) Is(target error) bool { return target == ErrInjected }

func statusError(f *Faults) error {
	se := &StatusError{StatusCode: f.status(), RetryAfter: f.RetryAfter}
	if f.RetryAfter > 0 {
		return retry.Judge(se, retry.Verdict{Class: failure.Throttled, Delay: f.RetryAfter, HasDelay: true})
	}
	c, _ := failure.OfHTTPStatus(se.StatusCode)
	return retry.Judge(se, retry.Verdict{Class: c})
}
