package unherdhttp

import (
	"net/http"

	"github.com/unherd/unherd/retry"
)

// Middleware marks every inbound request's context with
// retry.WithOuterRetry before calling h: the request comes from a caller
// that retries on its own, so calls h makes with that context (through a
// Transport, or any retry.Policy) make retry.Config.NestedAttempts
// attempts, one by default, and return failures promptly. Only the edge
// of a call chain retries; see the package doc, "Retry at one layer".
//
// Work that outlives the request or is not on its behalf should start
// from retry.WithoutOuterRetry(ctx).
func Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(retry.WithOuterRetry(r.Context())))
	})
}
