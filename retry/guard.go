package retry

import "context"

// Guard is consulted before every attempt and told how it ended: a circuit
// breaker, a client-side throttle, a rate limiter. Guards run inside the
// retry loop, so they see every attempt, retries included. From the
// outside in, a call is: the caller's deadline, then the retry loop (with
// its budget), then the guards, then the attempt (with its own timeout).
//
// Admit asks to start an attempt. It may wait (a rate limiter), honouring
// ctx. A non-nil error rejects the attempt locally: the loop stops at once
// with ErrRejected, wrapping that error, and never retries a local
// rejection. An admitted attempt gets a ticket, which the loop hands back
// to Done, with the attempt's outcome, exactly once; a breaker can keep a
// generation in it so that results from before a state change are ignored.
//
// Implementations must be safe for concurrent use.
type Guard interface {
	Admit(ctx context.Context) (ticket uint64, err error)
	Done(ticket uint64, o Outcome)
}

// Outcome is how an admitted attempt ended, as a Guard sees it.
type Outcome struct {
	// Err is the attempt's error, nil on success.
	Err error
	// Class is how Err was classified; meaningful only when Err != nil.
	Class Class
	// Abandoned is true when the attempt did not run to a result that says
	// anything about the dependency: the caller's context ended during it,
	// or a later guard rejected it before it started. A guard should
	// release what it reserved without counting a success or a failure.
	Abandoned bool
	// Ctx is the context of the call the attempt belongs to, the one
	// given to Admit, so that a guard's observer can report what the
	// outcome made it do with the caller's trace. Nil means
	// context.Background (a caller that reports outcomes without one).
	Ctx context.Context
}

// maxStackGuards is how many guards' tickets a Call holds without
// allocating.
const maxStackGuards = 4
