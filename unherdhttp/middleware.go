package unherdhttp

import (
	"net/http"

	"github.com/unherd/unherd/retry"
)

// Middleware marks an inbound request's context with retry.WithOuterRetry
// before calling h, when the caller will retry the request itself: calls
// h makes with that context (through a Transport, or any retry.Policy)
// then make retry.Config.NestedAttempts attempts, one by default, and
// return failures promptly, so only the edge of a call chain retries. See
// the package doc, "Retry at one layer".
//
// A request is marked when a caller that retries would send it again:
//
//   - its method is one a Transport repeats (GET, HEAD, OPTIONS, TRACE,
//     PUT, DELETE: idempotent by RFC 9110, section 9.2.2);
//   - it carries an Idempotency-Key (or X-Idempotency-Key) header, which
//     makes any method safe to repeat, and which a Transport with
//     Config.AutoIdempotencyKey adds to POST and PATCH;
//   - it carries the AttemptHeader, which a Transport sends on every
//     request after the first: a repeat proves that the caller repeats.
//
// Anything else, such as a POST without a key, is left unmarked: its
// caller does not send it twice, so the handler's own calls keep their
// retries, or no layer would retry at all.
//
// Marking says the caller retries the request, not every answer: a
// Transport at the edge retries 500, 502, 503 and 504 (500 not with
// Config.NoRetry500). A handler whose nested call failed should answer
// with a status every caller retries, 503 or 502, rather than 500.
//
// Work that outlives the request or is not on its behalf should start
// from retry.WithoutOuterRetry(ctx).
func Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if callerRetries(r) {
			r = r.WithContext(retry.WithOuterRetry(r.Context()))
		}
		h.ServeHTTP(w, r)
	})
}

// callerRetries reports whether the caller of an inbound request would
// send it again on a retryable failure.
func callerRetries(r *http.Request) bool {
	if idempotentMethod(r.Method) || hasIdempotencyKey(r.Header) {
		return true
	}
	_, repeated := r.Header[AttemptHeader]
	return repeated
}
