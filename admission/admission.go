package admission

import (
	"context"

	"github.com/unherd/unherd/failure"
)

// Guard is consulted before every attempt and told how it ended: a circuit
// breaker, a client-side throttle, a rate limiter. Guards run inside the
// retry loop, so they see every attempt, retries included. From the
// outside in, a call is: the caller's deadline, then the retry loop (with
// its budget), then the guards, then the attempt (with its own timeout).
//
// Admit asks to start an attempt. It may wait (a rate limiter), honouring
// ctx. A non-nil error rejects the attempt locally: the retry loop stops
// at once with retry.ErrRejected, wrapping that error, and never retries a
// local rejection. An admitted attempt gets a ticket, which the loop hands
// back to Done exactly once, with the attempt's outcome and the call's
// context (the one it gave Admit), so that what the outcome makes the
// guard do (a breaker opening, a rate limiter cutting its rate) reaches
// its observer with the caller's trace. A breaker can keep a generation
// in the ticket so that results from before a state change are ignored.
//
// Implementations must be safe for concurrent use.
type Guard interface {
	Admit(ctx context.Context) (ticket uint64, err error)
	Done(ctx context.Context, ticket uint64, o Outcome)
}

// Outcome is how an admitted attempt ended, as a Guard sees it.
type Outcome struct {
	// Err is the attempt's error, nil on success.
	Err error
	// Class is how Err was classified; meaningful only when Err != nil.
	Class failure.Class
	// Abandoned is true when the attempt did not run to a result that says
	// anything about the dependency: the caller's context ended during it,
	// or a later guard rejected it before it started. A guard should
	// release what it reserved without counting a success or a failure.
	Abandoned bool
}
