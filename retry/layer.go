package retry

import "context"

type outerRetryKey struct{}

// WithOuterRetry marks ctx as belonging to work done for a caller that
// retries on its own: an inbound request to a service whose clients use
// retries. Calls a Policy makes with such a context make NestedAttempts
// attempts (by default one), so that only one layer of a call chain
// retries: three layers of three attempts each would otherwise send 27
// attempts to the bottom one. Server middleware (unherdhttp.Middleware)
// sets the mark.
func WithOuterRetry(ctx context.Context) context.Context {
	if HasOuterRetry(ctx) {
		return ctx
	}
	return context.WithValue(ctx, outerRetryKey{}, true)
}

// WithoutOuterRetry removes the mark: work started with the returned
// context retries as a top layer. Use it for background work that outlives
// the inbound request.
func WithoutOuterRetry(ctx context.Context) context.Context {
	if !HasOuterRetry(ctx) {
		return ctx
	}
	return context.WithValue(ctx, outerRetryKey{}, false)
}

// HasOuterRetry reports whether ctx carries the mark of WithOuterRetry.
func HasOuterRetry(ctx context.Context) bool {
	v, _ := ctx.Value(outerRetryKey{}).(bool)
	return v
}
