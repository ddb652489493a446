package unherdhttp

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// TimeoutHeader is the request header by which a Transport tells the
// server how long its caller will still wait for this request: a
// non-negative decimal integer of milliseconds, rounded down, as Envoy's
// x-envoy-expected-rq-timeout-ms and gRPC's grpc-timeout tell it. Every
// attempt of a request whose context has a deadline, or under an attempt
// timeout, carries it: the shorter of the time left before the deadline
// and the attempt timeout, as the attempt starts. A request without
// either carries none.
//
// Shed reads it and puts that deadline on the handler's context, so that
// a handler that honours its context does no work for a caller that has
// timed out, and the handler's own calls through a Transport pass on what
// is left of it.
const TimeoutHeader = "Unherd-Timeout-Ms"

// maxHeaderTimeout caps the deadline a TimeoutHeader value sets.
const maxHeaderTimeout = 24 * time.Hour

// attemptBound returns how long the caller will wait for an attempt that
// starts now under ctx: the time left before ctx's deadline, or the
// attempt timeout if shorter; false when neither bounds it.
func (t *Transport) attemptBound(ctx context.Context) (time.Duration, bool) {
	timeout := t.timer.Timeout
	if t.timer.Source != nil {
		timeout = t.timer.Source.AttemptTimeout()
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return timeout, timeout > 0
	}
	left := time.Until(deadline)
	if timeout > 0 && timeout < left {
		left = timeout
	}
	return left, true
}

// formatTimeout formats d as a TimeoutHeader value: whole milliseconds,
// rounded down, and never negative.
func formatTimeout(d time.Duration) string {
	return strconv.FormatInt(max(int64(d/time.Millisecond), 0), 10)
}

// parseTimeout parses a TimeoutHeader value: a non-negative decimal
// integer of milliseconds, with surrounding whitespace. A value above
// maxHeaderTimeout (a day), however long, gives maxHeaderTimeout; any
// other form reports false, and is ignored.
func parseTimeout(value string) (time.Duration, bool) {
	d, ok := decimalDuration(strings.TrimSpace(value), time.Millisecond)
	if !ok {
		return 0, false
	}
	return min(d, maxHeaderTimeout), true
}
