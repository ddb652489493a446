package idempotency

import "context"

type principalKey struct{}

// principalCtx carries a principal in one allocation, without the
// boxing of context.WithValue.
type principalCtx struct {
	context.Context
	principal string
}

func (c *principalCtx) Value(key any) any {
	if key == (principalKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// WithPrincipal returns a copy of ctx that names the principal (the
// caller, as Config.Principal returns it) a Store call is made for. The
// middleware passes it to Store.Claim when Config.Principal is set, so
// that a store can bound what each principal holds without parsing keys:
// Memory does, by MemoryConfig.MaxShare. Stores that keep no account per
// principal ignore it.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return &principalCtx{Context: ctx, principal: principal}
}

// PrincipalFromContext returns the principal WithPrincipal put in ctx,
// and whether there was one: false for a call made for every caller
// alike (a middleware without Config.Principal). The empty string is a
// principal like any other.
func PrincipalFromContext(ctx context.Context) (principal string, ok bool) {
	if c, ok := ctx.Value(principalKey{}).(*principalCtx); ok {
		return c.principal, true
	}
	return "", false
}
