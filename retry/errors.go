package retry

import "github.com/unherd/unherd/retry/internal/core"

// Sentinel errors naming why a call stopped. Every error Do returns after
// at least one attempt is an [*Error] whose Reason is one of these, so
// errors.Is(err, ErrBudgetExhausted) and friends work directly.
var (
	// ErrAttemptsExhausted: the last allowed attempt failed.
	ErrAttemptsExhausted = core.ErrAttemptsExhausted
	// ErrDeadline: the next wait would have ended after the caller's
	// deadline, so it was not started.
	ErrDeadline = core.ErrDeadline
	// ErrBudgetExhausted: the retry budget refused the next retry.
	ErrBudgetExhausted = core.ErrBudgetExhausted
	// ErrPermanent: the error was classified permanent; repeating the call
	// cannot fix it.
	ErrPermanent = core.ErrPermanent
	// ErrFinal: the error was judged Final (Verdict.Final): not to be repeated,
	// whatever its class.
	ErrFinal = core.ErrFinal
	// ErrCancelled: the caller's context was cancelled or reached its
	// deadline, during an attempt or a wait.
	ErrCancelled = core.ErrCancelled
	// ErrRejected: a guard (circuit breaker, throttle) refused the attempt
	// locally; a local rejection is never retried, whether a guard in
	// Config.Guards made it or the operation returned it (see
	// engine.NewRejection).
	ErrRejected = core.ErrRejected
	// ErrServerDelayTooLong: the server asked for a longer wait than
	// Config.MaxServerDelay. Retrying sooner than the server allowed would
	// only be refused again, so the loop stops.
	ErrServerDelayTooLong = core.ErrServerDelayTooLong
)

// ErrAttemptTimeout is the context cause of an attempt whose per-attempt
// timeout expired, and is wrapped by that attempt's error. Such an attempt
// is a retryable timeout. An operation that holds only the attempt's
// context tells its timeout from the caller's end with
// context.Cause(ctx) == ErrAttemptTimeout.
var ErrAttemptTimeout = core.ErrAttemptTimeout

// ErrNoResult is the reason of the [*Error] that ends a [Policy.Attempts]
// loop whose body finished an attempt without assigning the loop's error
// variable, which holds ErrNoResult while the attempt runs. An err
// declared again inside the body, with :=, is the usual cause: assign the
// attempt's error, nil for a success, to the variable whose address
// Attempts was given.
var ErrNoResult = core.ErrNoResult

// ErrRetryableResult is the error of an attempt whose result asked for
// another try; see [OnResult].
var ErrRetryableResult = core.ErrRetryableResult

// Error is the error a call returns when it stops without success, after
// at least one attempt (a guard's rejection of the first attempt is one
// too). Its fields:
//
//   - Reason is why the call stopped: one of the Err sentinels above.
//   - Attempts is how many attempts ran.
//   - Last is the last attempt's error, nil if none ran.
//   - Cause is what stopped the call when it was not Last: the context's
//     cause for ErrCancelled, a guard's rejection for ErrRejected.
//
// Error() reads "<reason> after N attempts (<cause>): <last>", and Unwrap
// returns Reason, Last and Cause, so errors.Is and errors.As reach each.
type Error = core.Error
