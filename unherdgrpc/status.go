package unherdgrpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
)

// Metadata keys of gRFC A6, "gRPC Retry Design"
// (https://github.com/grpc/proposal/blob/master/A6-client-retries.md).
const (
	// PushbackKey is the trailer in which a server asks the client to wait
	// before it retries, in milliseconds: a non-negative decimal integer.
	// A negative or malformed value, or more than one value, asks the
	// client not to retry at all.
	PushbackKey = "grpc-retry-pushback-ms"
	// PreviousAttemptsKey is the request header sent on every attempt
	// after the first, with the number of attempts that came before it:
	// "1" on the first retry (or the first hedge), "2" on the next.
	PreviousAttemptsKey = "grpc-previous-rpc-attempts"
)

// DefaultCodes is the classification of status codes used where
// Config.Codes does not name a code: UNAVAILABLE is transient,
// RESOURCE_EXHAUSTED throttled, and every other code permanent.
// DEADLINE_EXCEEDED is a Timeout (retried) only when it is the attempt's
// own timeout that expired, never the caller's deadline, and CANCELLED
// from the caller's context is never retried whatever its class; those
// two rules are applied before the table and cannot be overridden.
func DefaultCodes(c codes.Code) failure.Class {
	switch c {
	case codes.Unavailable:
		return failure.Transient
	case codes.ResourceExhausted:
		return failure.Throttled
	}
	return failure.Permanent
}

// AttemptError is the error of one failed attempt as the retry loop sees
// it: the attempt's status and the pushback its trailer carried. The
// Retry.Observer (its event's Err), a guard or a custom classifier can read it with
// errors.As; the caller gets the last attempt's status through the
// call's *Error.
type AttemptError struct {
	// Status is the attempt's gRPC status.
	Status *status.Status
	// Pushback is the delay the server asked for (PushbackKey); it is
	// negative when the server asked not to retry, and zero with
	// HasPushback false when it asked nothing.
	Pushback    time.Duration
	HasPushback bool
	// RetryDelay is the delay of the status's google.rpc.RetryInfo
	// detail, and HasRetryDelay whether it had one with a valid,
	// non-negative delay. The retry waits at least the longer of it and
	// Pushback; a Pushback that asks not to retry wins over it.
	RetryDelay    time.Duration
	HasRetryDelay bool

	err error // the invoker's error
}

// Error returns the status's error text.
func (e *AttemptError) Error() string { return e.err.Error() }

// Unwrap returns the invoker's own error, a status error.
func (e *AttemptError) Unwrap() error { return e.err }

// GRPCStatus returns the attempt's status, so that status.FromError and
// status.Code see it through the retry loop's wrapping.
func (e *AttemptError) GRPCStatus() *status.Status { return e.Status }

// retryInfo returns the delay of st's first google.rpc.RetryInfo detail,
// if it has one whose delay is valid and not negative.
func retryInfo(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		ri, ok := d.(*errdetails.RetryInfo)
		if !ok || ri.GetRetryDelay() == nil {
			continue
		}
		rd := ri.GetRetryDelay()
		if rd.CheckValid() != nil || rd.AsDuration() < 0 {
			continue
		}
		return rd.AsDuration(), true
	}
	return 0, false
}

// serverDelay is the delay the server asked for, from the attempt's
// pushback and RetryInfo (see askedDelay).
func (e *AttemptError) serverDelay() (time.Duration, bool) {
	return askedDelay(e.Pushback, e.HasPushback, e.RetryDelay, e.HasRetryDelay)
}

// askedDelay is the delay a server asked for with a pushback p (if hasP)
// and a RetryInfo delay r (if hasR): a pushback that asks not to retry
// (negative) wins, since RetryInfo cannot say it; otherwise the longer of
// the two, since the server asked to wait at least each; or whichever
// there is.
func askedDelay(p time.Duration, hasP bool, r time.Duration, hasR bool) (time.Duration, bool) {
	switch {
	case hasP && p < 0:
		return p, true
	case hasP && hasR:
		return max(p, r), true
	case hasP:
		return p, true
	case hasR:
		return r, true
	}
	return 0, false
}

// parsePushback reads PushbackKey from a trailer, as A6 specifies: one
// non-negative decimal integer of milliseconds is a delay (saturating
// instead of overflowing); a malformed, negative or repeated value means
// "do not retry", reported as a negative delay; no value means none.
func parsePushback(tr metadata.MD) (d time.Duration, ok bool) {
	vs := tr.Get(PushbackKey)
	if len(vs) == 0 {
		return 0, false
	}
	if len(vs) > 1 {
		return -1, true
	}
	n, err := strconv.ParseInt(vs[0], 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange) && n > 0:
		return time.Duration(1<<63 - 1), true
	case err != nil || n < 0:
		return -1, true
	case n > int64((1<<63-1)/time.Millisecond):
		return time.Duration(1<<63 - 1), true
	}
	return time.Duration(n) * time.Millisecond, true
}

// judge turns an attempt's error and trailer into the error the retry
// loop classifies: marked with its class, carrying its pushback. actx is
// the attempt's context and ctx the caller's.
func (c *Client) judge(ctx, actx context.Context, err error, tr metadata.MD) error {
	st, ok := status.FromError(err)
	if !ok {
		// Not a status (a bug in an interceptor further down): leave it to
		// the retry loop's own rules.
		return err
	}
	ae := &AttemptError{Status: st, err: err}
	ae.Pushback, ae.HasPushback = parsePushback(tr)
	ae.RetryDelay, ae.HasRetryDelay = retryInfo(st)
	code := st.Code()
	switch {
	case ctx.Err() != nil:
		// The caller gave up or its deadline passed: the loop ends the
		// call as cancelled and retries nothing.
		return ae
	case actx.Err() != nil && context.Cause(actx) == retry.ErrAttemptTimeout:
		// The attempt's own timeout (DEADLINE_EXCEEDED, or CANCELLED for
		// a stream's), not the caller's deadline: a Timeout.
		return retry.Judge(ae, retry.Verdict{Class: failure.Timeout})
	case code == codes.DeadlineExceeded:
		// The server, or grpc-go, may report a deadline a moment before
		// the context's own timer ends it: whose deadline passed?
		now := time.Now()
		if dl, ok := ctx.Deadline(); ok && !now.Before(dl) {
			return retry.Judge(ae, retry.Verdict{Final: true}) // the caller's: never retried
		}
		if dl, ok := actx.Deadline(); ok && !now.Before(dl) {
			return retry.Judge(ae, retry.Verdict{Class: failure.Timeout}) // the attempt's
		}
	case code == codes.Canceled:
		return retry.MarkPermanent(ae)
	}
	v := retry.Verdict{Class: c.class(code)}
	delay, asked := ae.serverDelay()
	switch {
	case v.Class == failure.Permanent:
	case asked && delay < 0:
		// The server asked not to retry: stop, but let budgets and guards
		// count the failure as what it is.
		v.Final = true
	case asked:
		// The retry waits at least that long, on top of the schedule's
		// own jittered delay, never instead of it.
		v.Delay, v.HasDelay = delay, true
	}
	return retry.Judge(ae, v)
}

// committed marks the judged error of an attempt that received response
// headers (hdr not nil) as the end of the call: A6 commits an RPC when
// its client receives Response-Headers, and a committed RPC is never
// retried. The class stays, so budgets and guards count the failure as
// what it is. An attempt answered with trailers only has no headers.
func committed(judged error, hdr metadata.MD) error {
	if hdr == nil {
		return judged
	}
	return retry.Judge(judged, retry.Verdict{Final: true})
}

// class is the class of a status code: Config.Codes, then DefaultCodes.
func (c *Client) class(code codes.Code) failure.Class {
	if cl, ok := c.codes[code]; ok {
		return cl
	}
	return DefaultCodes(code)
}

// Error is the error of a call that failed after the retry loop ran: it
// wraps the loop's *retry.Error (errors.Is(err, retry.ErrAttemptsExhausted)
// works) and reports the last attempt's status as its own, so that
// status.FromError(err) and status.Code(err) give the caller exactly what
// the server answered, as without the interceptor.
type Error struct {
	// Status is the status the call reports: the last attempt's, or for a
	// call that ended without a status of its own (a guard's rejection,
	// the caller's cancellation) the status grpc-go would have given.
	Status *status.Status
	// Err is the retry loop's error.
	Err *retry.Error
}

// Error returns the retry loop's error text.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the retry loop's error.
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus returns Status.
func (e *Error) GRPCStatus() *status.Status { return e.Status }

// callError turns the retry loop's error into the call's.
func callError(ctx context.Context, err error) error {
	var re *retry.Error
	if !errors.As(err, &re) {
		return err
	}
	e := &Error{Err: re}
	var ae *AttemptError
	switch {
	case re.Reason == retry.ErrCancelled && ctx.Err() != nil:
		e.Status = status.FromContextError(ctx.Err())
	case errors.As(re.Last, &ae):
		e.Status = ae.Status
	case re.Reason == retry.ErrRejected:
		e.Status = status.New(codes.Unavailable, err.Error())
	default:
		st, _ := status.FromError(re.Last)
		e.Status = st
	}
	return e
}
