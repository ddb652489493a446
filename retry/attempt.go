package retry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/internal/lazyctx"
	"github.com/unherd/unherd/timeout"
)

// Attempt is one attempt of a call, from [Policy.StartAttempt] to
// [Attempt.End]: its context, bounded by the policy's per-attempt
// timeout, and its start, for the policy's [timeout.Source]. Every driver
// of a [Call] that makes attempts in real time (DoValue, the gRPC and
// HTTP clients, a hand-made protocol) runs each one between these two
// calls, so the timeout, the latency samples and the marking of a
// timed-out attempt are the same everywhere.
//
// An Attempt is a value used by one goroutine; the zero Attempt is not
// usable. An attempt under a policy without a timeout or a TimeoutSource
// costs nothing: its context is the caller's, and End returns err as it
// is. With a timeout, it costs one allocation until something watches its
// context's Done channel, and no timer before that.
type Attempt struct {
	parent context.Context  // the caller's
	bound  *lazyctx.Context // the attempt's own context, if it has a timeout
	ph     *phase           // the attempt's own context, if AttemptTimer.StartAfter made it
	ts     timeout.Source   // to tell the latency, or nil
	start  time.Time        // when the attempt started, if ts is set (not with ph)
	kept   bool             // Commit was called
}

// AttemptTimer starts attempts bounded by a per-attempt timeout: Source's
// AttemptTimeout, read at each start, if Source is set, else Timeout (none
// if not positive); with a Source, every attempt's latency and outcome
// are told to it. A [Policy] has one, built from Config.AttemptTimeout
// and Config.Timeouts, behind [Policy.StartAttempt]. A driver whose
// attempt timeout is configured apart from its Policy, because it counts
// from a point inside the attempt (an HTTP request's, from when it has a
// connection), makes its own and uses [AttemptTimer.StartAfter].
type AttemptTimer struct {
	Timeout time.Duration
	Source  timeout.Source
}

// Start starts an attempt under ctx, as [Policy.StartAttempt] does with
// the policy's timeout.
func (t AttemptTimer) Start(ctx context.Context) Attempt {
	if t.Source == nil && t.Timeout <= 0 {
		return Attempt{parent: ctx}
	}
	return startBounded(ctx, t.Timeout, t.Source)
}

// StartAttempt starts an attempt under ctx, the caller's context. Its
// context ([Attempt.Context]) ends when ctx does or after the attempt
// timeout: Config.Timeouts' AttemptTimeout, read now, or else
// Config.AttemptTimeout (none if not positive). Report how the attempt
// ended with [Attempt.End].
func (p *Policy) StartAttempt(ctx context.Context) Attempt {
	if p.timeouts == nil && p.attemptTimeout <= 0 {
		return Attempt{parent: ctx}
	}
	return startBounded(ctx, p.attemptTimeout, p.timeouts)
}

// startBounded starts an attempt with a timeout or a TimeoutSource.
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

// StartAfter starts an attempt whose timeout and latency count from a
// point inside it, which the driver marks with [Attempt.Restart] (an HTTP
// request's, from when it has a connection): until then the attempt is
// bounded by lead instead, or by the attempt timeout itself if lead is
// not positive. Without an attempt timeout there is no bound at all.
//
// Unlike Start's, the attempt always has a context of its own, made at
// once (a protocol that watches its context anyway gains nothing from a
// lazy one), and it is never released from ctx: after a successful End it
// lives until ctx ends or [Attempt.Cancel] is called, so a driver whose
// result outlives the call (a response body) ends it when done.
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
	start     atomic.Int64 // unix ns of the start, then of Restart; with a TimeoutSource
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

// Restart starts the attempt timeout and the latency clock again from
// now, for an attempt started by [AttemptTimer.StartAfter]: the lead is
// over. Only its first call counts. It may be called from another
// goroutine than the attempt's (an httptrace hook's), and does nothing
// for an attempt started otherwise.
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

// Cancel ends the attempt's context with cause (context.Canceled if
// nil): for a driver whose result outlived End (a response body being
// closed), or whose attempt must end early (a hedge that lost). It does
// nothing to an attempt without a context of its own.
func (a *Attempt) Cancel(cause error) {
	switch {
	case a.ph != nil:
		a.ph.cancel(cause)
	case a.bound != nil:
		a.bound.Cancel(cause)
	}
}

// TimedOut reports whether the attempt's own timeout has ended it, and
// not the caller's context: the attempt's failure is then a Timeout,
// which End marks (a driver that wraps errors of its own marks them
// first with [MarkAttemptTimeout]).
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

// AttemptTimedOut reports whether ctx has ended because an attempt's own
// timeout expired: ctx is an attempt's context ([Attempt.Context]), or
// derives from one, and its cause is ErrAttemptTimeout. A driver that
// holds only the attempt's context (an operation under DoValue, a hedge
// inside an attempt) asks it to tell the attempt's timeout from the
// caller's end; one that holds the Attempt asks [Attempt.TimedOut], which
// also sees an expiry that nothing has watched yet.
func AttemptTimedOut(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == ErrAttemptTimeout
}

// MarkAttemptTimeout wraps err, an attempt's error, so that it is
// ErrAttemptTimeout (errors.Is) and classifies as a Timeout, as
// [Attempt.End] wraps the error of an attempt that its own timeout ended.
// A driver that wraps such errors in its own types marks them first;
// End then leaves them as they are. MarkAttemptTimeout(nil) is nil, as
// with every marker.
func MarkAttemptTimeout(err error) error {
	if err == nil {
		return nil
	}
	return &timeoutError{err}
}

// Context returns the attempt's context: the caller's, bounded by the
// attempt timeout. Its cause (context.Cause) is ErrAttemptTimeout once
// the timeout has ended it.
func (a *Attempt) Context() context.Context {
	switch {
	case a.bound != nil:
		return a.bound
	case a.ph != nil:
		return a.ph.ctx
	}
	return a.parent
}

// End reports how the attempt ended, err being nil for a success, and
// returns the error to hand to [Call.Failed] (nil for a success). It
// tells the TimeoutSource the attempt's latency and whether it
// succeeded. An error of an attempt that its own timeout ended (not the
// caller's context; see [Attempt.TimedOut]) comes back wrapped with
// ErrAttemptTimeout, so it classifies as a Timeout, unless
// [MarkAttemptTimeout] marked it already; any other comes back as it is.
//
// A failed attempt's context is cancelled. A successful one's is not:
// its timeout is stopped and, for an attempt that [Policy.StartAttempt]
// or [AttemptTimer.Start] started, it is released from the caller's
// context, so that what the attempt returned (a response body,
// *sql.Rows) stays usable after the call returns and nothing stays
// registered with the caller's context; from then on it reports no
// deadline. After [Attempt.Commit], End leaves the context as it is,
// failed or not: the driver ends it. Call End once.
func (a *Attempt) End(err error) error {
	if a.bound == nil && a.ts == nil && a.ph == nil {
		return err
	}
	return a.end(err)
}

// end is End for an attempt with a timeout, a TimeoutSource or a phase.
func (a *Attempt) end(err error) error {
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

// Commit marks the point after which the attempt's result outlives its
// timeout but not the caller's context: a stream that will no longer be
// retried, a response whose body is still to be read. It stops the
// attempt timeout; the attempt's context then ends only with the
// caller's, or by [Attempt.Cancel] (or the cancellation of the parent the
// driver gave StartAttempt), which the driver calls when the result is
// done with. End must still be called when the attempt's outcome is known
// (a stream's first answer or its failure): it tells the TimeoutSource
// as usual and marks a timed-out failure, and leaves the context alone.
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
// without a timeout or a TimeoutSource takes StartAttempt's first path,
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
