package core

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/internal/lazyctx"
	"github.com/unherd/unherd/timeout"
)

// Attempt is engine.Attempt, which documents it.
type Attempt struct {
	parent context.Context  // the caller's
	bound  *lazyctx.Context // the attempt's own context, if it has a timeout
	ph     *phase           // the attempt's own context, if AttemptTimer.StartAfter made it
	ts     timeout.Source   // to tell the latency, or nil
	start  time.Time        // when the attempt started, if ts is set (not with ph)
	kept   bool             // Commit was called
	ended  bool             // End was called
}

// AttemptTimer is engine.AttemptTimer.
type AttemptTimer struct {
	Timeout time.Duration
	Source  timeout.Source
}

// StartAttempt is engine.StartAttempt.
func (p *Policy) StartAttempt(ctx context.Context) Attempt {
	if p.timeouts == nil && p.attemptTimeout <= 0 {
		return Attempt{parent: ctx}
	}
	return startBounded(ctx, p.attemptTimeout, p.timeouts)
}

// startBounded starts an attempt with a timeout or a timeout source.
func startBounded(ctx context.Context, timeout time.Duration, ts timeout.Source) Attempt {
	a := Attempt{parent: ctx}
	if ts != nil {
		a.ts = ts
		timeout = ts.AttemptTimeout()
		a.start = time.Now()
	}
	if timeout > 0 {
		a.bound = lazyctx.WithTimeout(ctx, timeout, ErrAttemptTimeout)
	}
	return a
}

// StartAfter is engine.AttemptTimer.StartAfter.
func (t AttemptTimer) StartAfter(ctx context.Context, lead time.Duration) Attempt {
	ph := &phase{timeout: t.Timeout}
	a := Attempt{parent: ctx, ph: ph, ts: t.Source}
	if t.Source != nil {
		ph.timeout = t.Source.AttemptTimeout()
		ph.start.Store(time.Now().UnixNano())
	}
	ph.ctx, ph.cancel = context.WithCancelCause(ctx)
	if ph.timeout > 0 {
		first := ph.timeout
		if lead > 0 {
			first = lead
		}
		ph.timer = time.AfterFunc(first, ph.expire)
	}
	return a
}

// phase is the state of an attempt that StartAfter started: its context,
// and its timer, which moves from the lead to the attempt timeout at
// Restart.
type phase struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timer     *time.Timer // nil without a timeout
	timeout   time.Duration
	start     atomic.Int64 // unix ns of the start, then of Restart; with a timeout source
	fired     atomic.Bool  // the timer fired: the timeout ended the attempt
	restarted atomic.Bool
}

func (ph *phase) expire() {
	ph.fired.Store(true)
	ph.cancel(ErrAttemptTimeout)
}

// stop stops the timer, noting whether it had fired.
func (ph *phase) stop() {
	if ph.timer != nil && !ph.timer.Stop() {
		ph.fired.Store(true)
	}
}

// Restart is engine.Attempt.Restart.
func (a *Attempt) Restart() {
	ph := a.ph
	if ph == nil || !ph.restarted.CompareAndSwap(false, true) {
		return
	}
	if a.ts != nil {
		ph.start.Store(time.Now().UnixNano())
	}
	if ph.timer != nil {
		ph.timer.Reset(ph.timeout)
	}
}

// Cancel is engine.Attempt.Cancel.
func (a *Attempt) Cancel(cause error) {
	switch {
	case a.ph != nil:
		a.ph.cancel(cause)
	case a.bound != nil:
		a.bound.Cancel(cause)
	}
}

// TimedOut is engine.Attempt.TimedOut.
func (a *Attempt) TimedOut() bool {
	switch {
	case a.parent.Err() != nil:
		return false
	case a.ph != nil:
		return a.ph.fired.Load() || AttemptTimedOut(a.ph.ctx)
	case a.bound != nil:
		// Err looks at the clock if nothing has ended the attempt yet: an
		// attempt that failed at its own deadline (a socket deadline
		// taken from it, say) timed out even if nobody watched Done.
		return a.bound.Err() != nil && a.bound.Expired()
	}
	return false
}

// AttemptTimedOut is engine.AttemptTimedOut.
func AttemptTimedOut(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == ErrAttemptTimeout
}

// MarkAttemptTimeout is engine.MarkAttemptTimeout.
func MarkAttemptTimeout(err error) error {
	if err == nil {
		return nil
	}
	return &timeoutError{err}
}

// Context is engine.Attempt.Context.
func (a *Attempt) Context() context.Context {
	switch {
	case a.bound != nil:
		return a.bound
	case a.ph != nil:
		return a.ph.ctx
	}
	return a.parent
}

// End is engine.Attempt.End.
func (a *Attempt) End(err error) error {
	if a.bound == nil && a.ts == nil && a.ph == nil {
		return err
	}
	return a.end(err)
}

// end is End for an attempt with a timeout, a timeout source or a phase.
func (a *Attempt) end(err error) error {
	if a.ended {
		return err
	}
	a.ended = true
	ph := a.ph
	if ph != nil {
		ph.stop()
	}
	if a.ts != nil {
		var latency time.Duration
		if ph != nil {
			latency = time.Duration(time.Now().UnixNano() - ph.start.Load())
		} else {
			latency = time.Since(a.start)
		}
		a.ts.Observe(latency, err == nil)
	}
	if a.bound == nil && ph == nil {
		return err
	}
	if err != nil {
		if a.TimedOut() && !marked(err) {
			err = &timeoutError{err}
		}
		if !a.kept {
			a.Cancel(nil)
		}
		return err
	}
	if a.bound != nil && !a.kept {
		a.bound.Detach()
	}
	return nil
}

// Commit is engine.Attempt.Commit.
func (a *Attempt) Commit() {
	a.kept = true
	switch {
	case a.ph != nil:
		a.ph.stop()
	case a.bound != nil:
		_ = a.bound.Err() // an expiry the clock shows but nobody saw yet still ends it
		a.bound.StopDeadline()
	}
}

// runAttempt runs fn once, between StartAttempt and End. An attempt
// without a timeout or a timeout source takes StartAttempt's first path,
// spelled out, so that no Attempt is built only to be copied
// (bench/NOTES.md, "Hot-path layout").
func runAttempt[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	if p.timeouts == nil && p.attemptTimeout <= 0 {
		return fn(ctx)
	}
	a := startBounded(ctx, p.attemptTimeout, p.timeouts)
	v, err := fn(a.Context())
	return v, a.End(err)
}

// marked reports whether err has been marked with MarkAttemptTimeout.
func marked(err error) bool {
	var te *timeoutError
	return errors.As(err, &te)
}

// timeoutError marks an attempt that its per-attempt timeout ended.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string   { return ErrAttemptTimeout.Error() + ": " + e.err.Error() }
func (e *timeoutError) Unwrap() []error { return []error{ErrAttemptTimeout, e.err} }
func (e *timeoutError) Timeout() bool   { return true }
