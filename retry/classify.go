package retry

import (
	"time"

	"github.com/unherd/unherd/failure"
)

// Class is how a failed attempt is treated; package failure defines it, so
// that budgets and guards, which retry builds on, speak it too.
type Class = failure.Class

// Failure classes, as the retry loop sees them.
const (
	// Transient failures are retried on the normal schedule.
	Transient = failure.Transient
	// Timeout failures (an attempt's own timeout, a net.Error that reports
	// Timeout) are retried; budgets may charge them more.
	Timeout = failure.Timeout
	// Throttled failures are retried on the schedule's throttled base.
	Throttled = failure.Throttled
	// Permanent failures stop the loop at once.
	Permanent = failure.Permanent
)

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// MarkPermanent marks err as permanent: the default classifier stops at once
// instead of retrying. errors.Is(MarkPermanent(err), ErrPermanent) is true, and
// err stays reachable through Unwrap. MarkPermanent(nil) is nil.
func MarkPermanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type finalError struct{ err error }

func (e *finalError) Error() string        { return e.err.Error() }
func (e *finalError) Unwrap() error        { return e.err }
func (e *finalError) Is(target error) bool { return target == ErrFinal }

// MarkFinal marks err as the end of the call without changing its class:
// the loop stops after this attempt with ErrFinal, but budgets and guards
// still count the failure as what it is. Use it for a failure that is not
// safe to repeat (a POST the server may have seen) or that a caller chose
// not to retry (a 500), where MarkPermanent would hide a server failure
// from a circuit breaker. MarkFinal(nil) is nil.
func MarkFinal(err error) error {
	if err == nil {
		return nil
	}
	return &finalError{err}
}

type throttledError struct{ err error }

func (e *throttledError) Error() string { return e.err.Error() }
func (e *throttledError) Unwrap() error { return e.err }

// MarkThrottled marks err as a throttling answer (the dependency asked for
// less traffic): it is retried from the schedule's throttled base.
// MarkThrottled(nil) is nil.
func MarkThrottled(err error) error {
	if err == nil {
		return nil
	}
	return &throttledError{err}
}

// ServerDelay is implemented by errors that carry a delay the server asked
// for (an HTTP Retry-After, a gRPC pushback). The retry loop waits at least
// that long, and at least the schedule's own delay: the server's delay is
// a floor over the schedule, with a small jitter added on top, bounded by
// Config.MaxServerDelay and by the caller's deadline. A negative delay
// means the server asked not to retry: the error is treated as permanent.
type ServerDelay interface {
	error
	RetryAfter() time.Duration
}

type afterError struct {
	err error
	d   time.Duration
}

func (e *afterError) Error() string             { return e.err.Error() }
func (e *afterError) Unwrap() error             { return e.err }
func (e *afterError) RetryAfter() time.Duration { return e.d }

// WithServerDelay returns err annotated with a server-directed delay d; see
// [ServerDelay]. It also marks err throttled. WithServerDelay(nil, d) is nil.
func WithServerDelay(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &afterError{&throttledError{err}, d}
}

// DefaultClassify is the classification used when Config.Classify is nil,
// and the one a custom classifier can fall back to:
//
//   - an error marked with MarkPermanent, an error that is ErrPermanent
//     itself (errors.Is: returned or wrapped by the operation, or an inner
//     Policy's *Error that stopped as permanent), or a ServerDelay with a
//     negative delay, is Permanent;
//   - an error marked with MarkThrottled or WithServerDelay is Throttled;
//   - an error whose tree holds an error with a Timeout() bool method is
//     Timeout if the first such error (depth first, as errors.As finds
//     it) reports true: context.DeadlineExceeded, a net.Error that timed
//     out, and the loop's own expired attempt timeouts;
//   - an error that is context.Canceled is Permanent: the caller's
//     context is still live (the loop checks it first), so someone inside
//     the operation cancelled it on purpose, and repeating it would
//     override that choice. A classifier that knows better (a library
//     that reports its own connection loss as Canceled) can return
//     Transient;
//   - everything else is Transient.
//
// The caller's own cancellation is decided before classification and is
// never retried, whatever this returns. An error that is ErrFinal (or
// marked with MarkFinal) keeps the class these rules give it but ends the
// call with ErrFinal.
func DefaultClassify(err error) Class {
	m := inspect(err)
	return m.class(nil, err)
}
