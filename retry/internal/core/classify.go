package core

import (
	"time"

	"github.com/unherd/unherd/failure"
)

// Verdict is retry.Verdict.
type Verdict struct {
	Class    failure.Class
	Final    bool
	Delay    time.Duration
	HasDelay bool
}

// Judge is retry.Judge.
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

// MarkPermanent is retry.MarkPermanent.
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

// DefaultClassify is engine.DefaultClassify.
func DefaultClassify(err error) failure.Class {
	m := inspect(err)
	return m.class(nil, err)
}
