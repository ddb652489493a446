package core

import (
	"fmt"
	"strings"
)

// The sentinels of retry, which documents them.
var (
	ErrAttemptsExhausted  = newSentinel("retry: attempts exhausted")
	ErrDeadline           = newSentinel("retry: next wait would pass the deadline")
	ErrBudgetExhausted    = newSentinel("retry: budget exhausted")
	ErrPermanent          = newSentinel("retry: permanent error")
	ErrFinal              = newSentinel("retry: not retried (marked final)")
	ErrCancelled          = newSentinel("retry: cancelled")
	ErrRejected           = newSentinel("retry: rejected locally")
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

// NewRejection is engine.NewRejection.
func NewRejection(msg string) error { return &rejection{msg} }

// ErrAttemptTimeout is retry.ErrAttemptTimeout.
var ErrAttemptTimeout = newSentinel("retry: attempt timed out")

// Error is retry.Error.
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
