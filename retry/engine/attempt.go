package engine

import (
	"context"
	"time"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/internal/core"
	"github.com/unherd/unherd/timeout"
)

// Attempt is one attempt of a call, from [StartAttempt] to
// [Attempt.End]: its context, bounded by the policy's per-attempt
// timeout, and its start, for the policy's [timeout.Source]. Every driver
// of a [Call] that makes attempts in real time (DoValue, the gRPC and
// HTTP clients, a hand-made protocol) runs each one between these two
// calls, so the timeout, the latency samples and the marking of a
// timed-out attempt are the same everywhere.
//
// An Attempt is a value used by one goroutine; the zero Attempt is not
// usable. An attempt under a policy without a timeout or a timeout.Source
// costs nothing: its context is the caller's, and End returns err as it
// is. With a timeout, it costs one allocation until something watches its
// context's Done channel, and no timer before that.
type Attempt struct {
	a core.Attempt
}

// AttemptTimer starts attempts whose per-attempt timeout counts from a
// point inside the attempt (an HTTP request's, from when it has a
// connection): Source's AttemptTimeout, read at each start, if Source is
// set, else Timeout (none if not positive); with a Source, every
// attempt's latency and outcome are told to it. A driver whose attempts
// are timed from their start, as a retry.Policy's are, uses
// [StartAttempt] instead: the two are the one way each kind of attempt
// starts. A driver with such a timer of its own takes Timeout and Source
// from the retry.Config it would have given the Policy, and gives the
// Policy none, so that the attempts are not timed twice.
type AttemptTimer struct {
	Timeout time.Duration
	Source  timeout.Source
}

// StartAttempt starts an attempt under ctx, the caller's context. Its
// context ([Attempt.Context]) ends when ctx does or after the attempt
// timeout: Config.Timeouts' AttemptTimeout, read now, or else
// Config.AttemptTimeout (none if not positive). Report how the attempt
// ended with [Attempt.End].
func StartAttempt(ctx context.Context, p *retry.Policy) Attempt {
	return Attempt{a: (*core.Policy)(p).StartAttempt(ctx)}
}

// StartAfter starts an attempt whose timeout and latency count from a
// point inside it, which the driver marks with [Attempt.Restart] (an HTTP
// request's, from when it has a connection): until then the attempt is
// bounded by lead instead, or by the attempt timeout itself if lead is
// not positive. Without an attempt timeout there is no bound at all.
//
// Unlike StartAttempt's, the attempt always has a context of its own, made at
// once (a protocol that watches its context anyway gains nothing from a
// lazy one), and it is never released from ctx: after a successful End it
// lives until ctx ends or [Attempt.Cancel] is called, so a driver whose
// result outlives the call (a response body) ends it when done.
func (t AttemptTimer) StartAfter(ctx context.Context, lead time.Duration) Attempt {
	return Attempt{a: core.AttemptTimer(t).StartAfter(ctx, lead)}
}

// Context returns the attempt's context: the caller's, bounded by the
// attempt timeout. Its cause (context.Cause) is retry.ErrAttemptTimeout once
// the timeout has ended it.
func (a *Attempt) Context() context.Context { return a.a.Context() }

// End reports how the attempt ended, err being nil for a success, and
// returns the error to hand to [Call.Failed] (nil for a success). It
// tells the timeout.Source the attempt's latency and whether it
// succeeded. An error of an attempt that its own timeout ended (not the
// caller's context; see [Attempt.TimedOut]) comes back wrapped with
// retry.ErrAttemptTimeout, so it classifies as a Timeout, unless
// [MarkAttemptTimeout] marked it already; any other comes back as it is.
//
// A failed attempt's context is cancelled. A successful one's is not:
// its timeout is stopped and, for an attempt that [StartAttempt]
// started, it is released from the caller's
// context, so that what the attempt returned (a response body,
// *sql.Rows) stays usable after the call returns and nothing stays
// registered with the caller's context; from then on it reports no
// deadline. After [Attempt.Commit], End leaves the context as it is,
// failed or not: the driver ends it. Only the first End counts: a later
// one returns err as it is and tells nobody, so a driver with several
// paths to an attempt's end (a stream's receive, its send, its close)
// need not keep a flag of its own.
func (a *Attempt) End(err error) error { return a.a.End(err) }

// Commit marks the point after which the attempt's result outlives its
// timeout but not the caller's context: a stream that will no longer be
// retried, a response whose body is still to be read. It stops the
// attempt timeout; the attempt's context then ends only with the
// caller's, or by [Attempt.Cancel] (or the cancellation of the parent the
// driver gave StartAttempt), which the driver calls when the result is
// done with. End must still be called when the attempt's outcome is known
// (a stream's first answer or its failure): it tells the timeout.Source
// as usual and marks a timed-out failure, and leaves the context alone.
func (a *Attempt) Commit() { a.a.Commit() }

// Restart starts the attempt timeout and the latency clock again from
// now, for an attempt started by [AttemptTimer.StartAfter]: the lead is
// over. Only its first call counts. It may be called from another
// goroutine than the attempt's (an httptrace hook's), and does nothing
// for an attempt started otherwise.
func (a *Attempt) Restart() { a.a.Restart() }

// Cancel ends the attempt's context with cause (context.Canceled if
// nil): for a driver whose result outlived End (a response body being
// closed), or whose attempt must end early (a hedge that lost). It does
// nothing to an attempt without a context of its own.
func (a *Attempt) Cancel(cause error) { a.a.Cancel(cause) }

// TimedOut reports whether the attempt's own timeout has ended it, and
// not the caller's context: the attempt's failure is then a Timeout,
// which End marks (a driver that wraps errors of its own marks them
// first with [MarkAttemptTimeout]).
func (a *Attempt) TimedOut() bool { return a.a.TimedOut() }

// MarkAttemptTimeout wraps err, an attempt's error, so that it is
// retry.ErrAttemptTimeout (errors.Is) and classifies as a Timeout, as
// [Attempt.End] wraps the error of an attempt that its own timeout ended.
// A driver that wraps such errors in its own types marks them first;
// End then leaves them as they are. MarkAttemptTimeout(nil) is nil, as
// with every marker.
func MarkAttemptTimeout(err error) error { return core.MarkAttemptTimeout(err) }
