package retry

import (
	"context"
	"iter"

	"github.com/unherd/unherd/retry/internal/core"
)

// Policy runs calls with retries as its Config describes. It is immutable
// after New and safe for concurrent use; build one per dependency and share
// it. The zero Policy is not usable; call New or Default.
type Policy core.Policy

// New validates cfg and returns a Policy built from it.
func New(cfg Config) (*Policy, error) {
	p, err := core.New(core.Config(cfg))
	return (*Policy)(p), err
}

// Default returns a Policy with the zero Config's defaults. Each call
// returns a new Policy with a retry budget of its own, so call it once per
// dependency and keep the result: a Policy made per call would start every
// call with a full budget, and the budget would never stop a storm.
func Default() *Policy {
	p, err := New(Config{})
	if err != nil {
		panic("retry: zero Config is invalid: " + err.Error()) // unreachable: the zero Config is valid
	}
	return p
}

// Do calls fn until it succeeds or the policy stops it, and returns nil or
// an [*Error] that wraps the stop reason and fn's last error. fn receives a
// context bounded by the per-attempt timeout, if one is set.
func (p *Policy) Do(ctx context.Context, fn func(context.Context) error) error {
	return (*core.Policy)(p).Do(ctx, fn)
}

// DoValue is Do for an operation that returns a value: it returns the value
// of the first successful attempt, or the last attempt's value and an
// [*Error].
//
// On failure the value is whatever the last attempt that ran returned
// with its error: usually the zero T, but an operation that returns a
// partial result with its error, or one wrapped with [OnResult] (a job
// still pending), hands it back; the zero T if no attempt ran. A value
// that holds resources is the caller's to release, as after a success.
//
// With Config.AttemptTimeout, a failed attempt's context is cancelled
// when it returns; the successful attempt's context is not. Its timer is
// stopped and it is released from the caller's context, so the value (a
// response body, *sql.Rows) stays usable after DoValue returns, until the
// caller closes it; a later cancellation of the caller's context no
// longer reaches it, so bound its use by the value's own means.
//
// DoValue is a loop around the per-call state machine (package
// retry/engine takes it apart): admit, run fn bounded by the attempt
// timeout, then report a success, or a failure, which waits. A first
// attempt that succeeds costs one call of fn and nothing else: no
// allocation, no goroutine, no timer, no clock read (unless a
// timeout.Source needs the attempt's latency). A retry with a zero delay
// arms no timer either. The waits of one call share one timer, taken from
// a pool shared by all calls and given back when the call ends, so a call
// that waits allocates nothing for it once the pool is warm.
func DoValue[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	return core.DoValue(ctx, (*core.Policy)(p), fn)
}

// Attempts returns the attempts of one call as a sequence of contexts,
// one per attempt, for a protocol of one's own, with the loop's error
// variable err as the way each attempt reports how it ended:
//
//	var err error
//	for ctx := range p.Attempts(ctx, &err) {
//		resp, err = send(ctx, req) // nil for a success
//	}
//	return resp, err
//
// Each context is the attempt's: the caller's, bounded by the per-attempt
// timeout. Before each attempt the guards admit it; after it, what the
// body left in *err decides what follows, as [Policy.Do] decides from
// its function's error:
//
//   - nil: the call succeeded, and the loop ends.
//   - an error: the call retries after the policy's delay, or the loop
//     ends with *err set to the call's [*Error] (which wraps the
//     attempt's error and the reason it stopped).
//   - a break or a return from the body: the loop ends there, and *err
//     keeps what the body left. After a failure, the failure is recorded
//     as final (the budget and the guards hear it; no retry is
//     withdrawn); after a success, the success.
//   - a panic in the body: the attempt is reported to the guards as
//     abandoned, no retry stays withdrawn, and the panic goes on.
//   - *err left unassigned: the loop ends with an [*Error] whose reason
//     is [ErrNoResult], and the attempt is reported as abandoned.
//
// A rejection by a guard, before an attempt, ends the loop with *err set
// to that rejection. Whether the call is nested comes from ctx alone
// ([WithOuterRetry]). Attempts panics if err is nil. The sequence may be
// ranged over once.
func (p *Policy) Attempts(ctx context.Context, err *error) iter.Seq[context.Context] {
	return (*core.Policy)(p).Attempts(ctx, err)
}

// OnResult wraps fn so that a result for which again reports true counts
// as a failed attempt: fn's value is kept and its error is
// ErrRetryableResult, a Transient failure, retried by the policy's rules
// like any other. Use it for an answer that says "not yet" (a job still
// pending, an empty poll). If the call runs out of attempts, DoValue
// returns the last such value with an *Error that wraps
// ErrRetryableResult. again is not called for attempts that fail.
func OnResult[T any](fn func(context.Context) (T, error), again func(T) bool) func(context.Context) (T, error) {
	return core.OnResult(fn, again)
}

// WithOuterRetry marks ctx as belonging to work done for a caller that
// retries on its own: an inbound request to a service whose clients use
// retries. Calls a Policy makes with such a context make NestedAttempts
// attempts (by default one), so that only one layer of a call chain
// retries: three layers of three attempts each would otherwise send 27
// attempts to the bottom one. Server middleware (unherdhttp.Middleware)
// sets the mark.
func WithOuterRetry(ctx context.Context) context.Context { return core.WithOuterRetry(ctx) }

// WithoutOuterRetry removes the mark: work started with the returned
// context retries as a top layer. Use it for background work that outlives
// the inbound request.
func WithoutOuterRetry(ctx context.Context) context.Context { return core.WithoutOuterRetry(ctx) }
