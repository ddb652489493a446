package retry

import (
	"time"

	"github.com/unherd/unherd/failure"
)

// Verdict is how an integration judged a failed attempt, handed to the
// call as values with [Judge]: the class it gave the failure, whether the
// call must end after it, and the delay the server asked for. It is what
// unherdhttp makes of a status and its Retry-After, and unherdgrpc of a
// status code and its pushback; a user's own protocol hands its answers
// to the call the same way, instead of wrapping errors in types of its
// own for a classifier to find again.
type Verdict struct {
	// Class is the attempt's class. The class of an error is the most
	// severe of the classes its tree's verdicts name and of what
	// DefaultClassify's own rules find in it (Permanent, then Throttled,
	// then Timeout): so Transient adds nothing, and a verdict cannot make
	// an attempt that timed out merely Transient.
	Class failure.Class
	// Final ends the call after this attempt with ErrFinal, keeping the
	// class: for a failure not safe to repeat, or that the caller chose
	// not to retry, which budgets and guards must still count as what it
	// is.
	Final bool
	// Delay is the wait the server asked for (a Retry-After, a gRPC
	// pushback), when HasDelay is set: the retry waits at least that
	// long, and at least the schedule's own delay, with a small jitter
	// on top; a negative Delay asks not to retry, and
	// the failure is Permanent.
	Delay    time.Duration
	HasDelay bool
}

// Judge returns err carrying v, the verdict on the attempt that failed
// with it, for the call's classification ([DefaultClassify], and so
// [Call.Done] and [Call.Failed]) to read as it is. err stays reachable
// through Unwrap and its text is unchanged; errors.Is reports ErrPermanent
// for a Permanent verdict and ErrFinal for a Final one, and with HasDelay
// the result has a RetryAfter method that returns v.Delay. Verdicts nest: an error judged twice
// keeps the most severe class, is final if either says so, and waits the
// outer verdict's delay. Judge(nil, v) is nil.
func Judge(err error, v Verdict) error {
	if err == nil {
		return nil
	}
	j := judged{err: err, v: v, bare: isBare(err)}
	if v.HasDelay {
		return &judgedDelay{j}
	}
	return &j
}

// judged is the error Judge returns: err with its verdict.
type judged struct {
	err error
	v   Verdict
	// bare is set when err has nothing for the classification to find:
	// it wraps nothing and has none of the methods or identities inspect
	// looks for. The walk then stops at the verdict, which saves the
	// method-set tests of a plain error (errors.New) on every attempt that
	// fails with one.
	bare bool
}

func (e *judged) Error() string { return e.err.Error() }
func (e *judged) Unwrap() error { return e.err }
func (e *judged) Is(target error) bool {
	return target == ErrPermanent && e.v.Class == failure.Permanent || target == ErrFinal && e.v.Final
}

// judgedDelay is a judged error with a server delay: a serverDelay.
type judgedDelay struct{ judged }

func (e *judgedDelay) RetryAfter() time.Duration { return e.v.Delay }

// MarkPermanent marks err as permanent, the common verdict: the call stops
// at once instead of retrying. errors.Is(MarkPermanent(err), ErrPermanent)
// is true, and err stays reachable through Unwrap. MarkPermanent(nil) is
// nil. It is Judge(err, Verdict{Class: failure.Permanent}); every other
// verdict is given with Judge.
func MarkPermanent(err error) error { return Judge(err, Verdict{Class: failure.Permanent}) }

// serverDelay is what an error that carries a delay the server asked for
// (an HTTP Retry-After, a gRPC pushback) has: a RetryAfter method. The
// retry loop waits at least that long, and at least the schedule's own
// delay: the server's delay is a floor over the schedule, with a small
// jitter added on top, bounded by Config.MaxServerDelay and by the
// caller's deadline. A negative delay means the server asked not to
// retry: the error is treated as permanent. [Judge] with
// Verdict.HasDelay makes one; any error with a RetryAfter()
// time.Duration method, of any package, is one.
type serverDelay interface {
	error
	RetryAfter() time.Duration
}

// DefaultClassify is the classification used when Config.Classify is nil,
// and the one a custom classifier can fall back to:
//
//   - an error judged Permanent ([Judge], MarkPermanent), an error that
//     is ErrPermanent itself (errors.Is: returned or wrapped by the
//     operation, or an inner Policy's *Error that stopped as permanent),
//     or one with a negative server delay (a RetryAfter method), is
//     Permanent;
//   - an error judged Throttled (with or without a server delay) is
//     Throttled;
//   - an error judged Timeout is Timeout, and so is an error whose tree
//     holds an error with a Timeout() bool method if the first such
//     error (depth first, as errors.As finds it) reports true:
//     context.DeadlineExceeded, a net.Error that timed out, and the
//     loop's own expired attempt timeouts;
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
// judged Final) keeps the class these rules give it but ends the
// call with ErrFinal.
func DefaultClassify(err error) failure.Class {
	m := inspect(err)
	return m.class(nil, err)
}
