package retry

import (
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry/internal/core"
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
func Judge(err error, v Verdict) error { return core.Judge(err, core.Verdict(v)) }

// MarkPermanent marks err as permanent, the common verdict: the call stops
// at once instead of retrying. errors.Is(MarkPermanent(err), ErrPermanent)
// is true, and err stays reachable through Unwrap. MarkPermanent(nil) is
// nil. It is Judge(err, Verdict{Class: failure.Permanent}); every other
// verdict is given with Judge.
func MarkPermanent(err error) error { return core.MarkPermanent(err) }
