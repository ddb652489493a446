package idempotency

import (
	"context"
	"sync/atomic"
	"time"
)

// Lease is the claim the request being served holds on its key. The
// middleware puts it in the handler's request context; a handler that
// commits its side effects and the record's completion in one database
// transaction (unherdpg's InTx does) reads it with LeaseFromContext.
type Lease struct {
	// Key is the store key: the principal and the client's key.
	Key string
	// Token is the fencing token of the claim.
	Token uint64
	// TTL is how long the completed record is to be kept.
	TTL time.Duration
	// MaxResponseBody is the largest response body to store.
	MaxResponseBody int64

	completed atomic.Bool
}

// MarkCompleted tells the middleware that the record was already
// completed with the response the handler is about to write, so that it
// does not complete it again.
func (l *Lease) MarkCompleted() { l.completed.Store(true) }

// Completed reports whether MarkCompleted was called: for middleware of
// other protocols (unherdgrpc's), which must not complete such a record
// again.
func (l *Lease) Completed() bool { return l.completed.Load() }

type leaseKey struct{}

// LeaseFromContext returns the lease of the request whose context ctx is,
// if the middleware claimed a key for it.
func LeaseFromContext(ctx context.Context) (*Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(*Lease)
	return l, ok
}

// ContextWithLease returns a context carrying l, as the middleware gives
// a handler that holds a key; for testing handlers, and for code that
// claims keys without the middleware.
func ContextWithLease(ctx context.Context, l *Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}
