package hedge

import (
	"time"

	"github.com/unherd/unherd/internal/errtree"
)

// An attempt's error can steer the hedges still to come, as a gRPC
// server's answer does in proposal A6 ("Summary of Retry and Hedging
// Logic", https://github.com/grpc/proposal/blob/master/A6-client-retries.md):
// a pushback delays or stops them, and a committed attempt ends the call.
// Both marks wrap the error: errors.Is and errors.As still reach it, and
// Do and DoFirstSuccess return it as it is.

type pushbackError struct {
	err error
	d   time.Duration
}

func (e *pushbackError) Error() string { return e.err.Error() }
func (e *pushbackError) Unwrap() error { return e.err }

// WithPushback returns err, an attempt's error, carrying a server's
// pushback for the hedges still to come: with d zero or more, the next
// hedge starts d after this failure, instead of at once (a non-fatal
// error) or when its delay passes, and the hedges after it one delay
// later each; with d negative, no hedge starts any more, and the call
// waits for the attempts already running. A fatal error still settles
// the call at once. WithPushback(nil, d) is nil.
func WithPushback(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &pushbackError{err, d}
}

// pushbackOf returns the pushback err carries, if any.
func pushbackOf(err error) (time.Duration, bool) {
	if p, ok := errtree.Find[*pushbackError](err); ok {
		return p.d, true
	}
	return 0, false
}

type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// MarkFatal returns err, an attempt's error, marked as settling the call
// at once, in Do and DoFirstSuccess alike and whatever Config.NonFatal
// says: the other attempts are cancelled and the call returns err. It is
// for an attempt the call has committed to (gRPC commits a call once its
// response headers arrive), whose failure is the call's. MarkFatal(nil)
// is nil.
func MarkFatal(err error) error {
	if err == nil {
		return nil
	}
	return &fatalError{err}
}

// isFatal reports whether err is marked by MarkFatal.
func isFatal(err error) bool {
	_, ok := errtree.Find[*fatalError](err)
	return ok
}
