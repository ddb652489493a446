package core

import "context"

type outerRetryKey struct{}

// WithOuterRetry is retry.WithOuterRetry.
func WithOuterRetry(ctx context.Context) context.Context {
	if HasOuterRetry(ctx) {
		return ctx
	}
	return context.WithValue(ctx, outerRetryKey{}, true)
}

// WithoutOuterRetry is retry.WithoutOuterRetry.
func WithoutOuterRetry(ctx context.Context) context.Context {
	if !HasOuterRetry(ctx) {
		return ctx
	}
	return context.WithValue(ctx, outerRetryKey{}, false)
}

// HasOuterRetry is engine.HasOuterRetry.
func HasOuterRetry(ctx context.Context) bool {
	v, _ := ctx.Value(outerRetryKey{}).(bool)
	return v
}
