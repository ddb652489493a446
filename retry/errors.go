package retry

import (
	"fmt"
	"strings"
)

// Sentinel errors naming why a call stopped. Every error Do returns after
// at least one attempt is an [*Error] whose Reason is one of these, so
// errors.Is(err, ErrBudgetExhausted) and friends work directly.
var (
	// ErrAttemptsExhausted: the last allowed attempt failed.
	ErrAttemptsExhausted = newSentinel("retry: attempts exhausted")
	// ErrDeadline: the next wait would have ended after the caller's
	// deadline, so it was not started.
	ErrDeadline = newSentinel("retry: next wait would pass the deadline")
	// ErrBudgetExhausted: the retry budget refused the next retry.
	ErrBudgetExhausted = newSentinel("retry: budget exhausted")
	// ErrPermanent: the error was classified permanent; repeating the call
	// cannot fix it.
	ErrPermanent = newSentinel("retry: permanent error")
	// ErrFinal: the error was judged Final (Verdict.Final): not to be repeated,
	// whatever its class.
	ErrFinal = newSentinel("retry: not retried (marked final)")
	// ErrCancelled: the caller's context was cancelled or reached its
	// deadline, during an attempt or a wait.
	ErrCancelled = newSentinel("retry: cancelled")
	// ErrRejected: a guard (circuit breaker, throttle) refused the attempt
	// locally; a local rejection is never retried, whether a guard in
	// Config.Guards made it or the operation returned it (see
	// NewRejection).
	ErrRejected = newSentinel("retry: rejected locally")
	// ErrServerDelayTooLong: the server asked for a longer wait than
	// Config.MaxServerDelay. Retrying sooner than the server allowed would
	// only be refused again, so the loop stops.
	ErrServerDelayTooLong = newSentinel("retry: server asked to wait longer than MaxServerDelay")
)

// sentinel is the type of the package's sentinel errors: errors.New's,
// but a type of the package's own, so that the error classification
// tells them from any other error by its type alone, without comparing
// each node of an error tree with every sentinel.
type sentinel struct{ msg string }

func newSentinel(msg string) error { return &sentinel{msg} }

func (e *sentinel) Error() string { return e.msg }

// rejection is a local-rejection sentinel that matches ErrRejected.
type rejection struct{ msg string }

func (e *rejection) Error() string        { return e.msg }
func (e *rejection) Is(target error) bool { return target == ErrRejected }

// NewRejection returns a new sentinel error with the given message that
// errors.Is matches to ErrRejected. Guards (breaker.ErrOpen,
// throttle.ErrThrottled) define their rejections with it, so that the
// retry loop never retries a local rejection, even when it reaches the
// loop as the operation's own error (a breaker used through its Allow
// method inside the operation, or an inner Policy's *Error).
func NewRejection(msg string) error { return &rejection{msg} }

// ErrAttemptTimeout is the context cause of an attempt whose per-attempt
// timeout expired. Such an attempt is a retryable timeout.
var ErrAttemptTimeout = newSentinel("retry: attempt timed out")

// Error is the error Do returns when a call fails. It keeps why the loop
// stopped, how many attempts ran, the last attempt's error and, for a
// cancelled call, the context's cause. errors.Is and errors.As reach all of
// them through Unwrap.
type Error struct {
	// Reason is one of the Err sentinels of this package.
	Reason error
	// Attempts is the number of attempts made.
	Attempts int
	// Last is the last attempt's error (nil if no attempt ran: a guard
	// rejected the first).
	Last error
	// Cause is context.Cause of the caller's context for ErrCancelled, the
	// guard's rejection for ErrRejected, and nil otherwise.
	Cause error
}

// Error says why the loop stopped, after how many attempts, and the last
// attempt's error.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Reason != nil {
		b.WriteString(e.Reason.Error())
	} else {
		b.WriteString("retry: stopped")
	}
	fmt.Fprintf(&b, " after %d attempt", e.Attempts)
	if e.Attempts != 1 {
		b.WriteByte('s')
	}
	if e.Cause != nil && e.Cause != e.Last {
		b.WriteString(" (")
		b.WriteString(e.Cause.Error())
		b.WriteByte(')')
	}
	if e.Last != nil {
		b.WriteString(": ")
		b.WriteString(e.Last.Error())
	}
	return b.String()
}

// Unwrap returns the reason, the last attempt's error and the cause, leaving
// out nil ones.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 3)
	for _, err := range []error{e.Reason, e.Last, e.Cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
