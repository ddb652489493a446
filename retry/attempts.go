package retry

import (
	"context"
	"iter"
	"time"
)

// ErrNoResult is the reason of the [*Error] that ends a [Policy.Attempts]
// loop whose body finished an attempt without assigning the loop's error
// variable, which holds ErrNoResult while the attempt runs. An err
// declared again inside the body, with :=, is the usual cause: assign the
// attempt's error, nil for a success, to the variable whose address
// Attempts was given.
var ErrNoResult = newSentinel("retry: the loop body set no error for its attempt")

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
	if err == nil {
		panic("retry: Policy.Attempts needs the address of the error variable the loop body sets")
	}
	return func(yield func(context.Context) bool) {
		c := p.Begin(false)
		var a Attempt
		settled := true // no attempt in flight, the call not to be cancelled
		defer func() {
			if !settled { // the body panicked
				a.Cancel(nil)
				c.Cancel(nil, nil)
			}
		}()
		for {
			if e := c.Admit(ctx); e != nil {
				*err = e
				return
			}
			a = p.StartAttempt(ctx)
			*err = ErrNoResult
			settled = false
			more := yield(a.Context())
			settled = true
			if *err == ErrNoResult {
				a.Cancel(nil)
				c.abandon(nil)
				c.w.release()
				c.gaveUp(ErrNoResult)
				*err = &Error{Reason: ErrNoResult, Attempts: c.attempt}
				return
			}
			e := a.End(*err)
			switch {
			case e == nil:
				c.Succeeded()
				return
			case !more:
				// The caller stopped after a failure: final, for the
				// budget and the guards, and *err is the caller's.
				c.Done(time.Time{}, time.Time{}, Judge(e, Verdict{Final: true}), 0)
				c.w.release()
				return
			}
			if e = c.Failed(ctx, e); e != nil {
				*err = e
				return
			}
		}
	}
}
