package core

import (
	"context"
	"iter"
	"time"
)

// ErrNoResult is retry.ErrNoResult.
var ErrNoResult = newSentinel("retry: the loop body set no error for its attempt")

// Attempts is retry.Policy.Attempts.
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
