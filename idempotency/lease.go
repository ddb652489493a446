package idempotency

import (
	"cmp"
	"context"
	"net/http"
	"strings"
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
	// MaxResponseBody is the largest response body to store. Zero means
	// DefaultMaxResponseBody.
	MaxResponseBody int64
	// StoreHeader reports whether a response header field is stored;
	// nil means StorableHeader.
	StoreHeader func(name string) bool

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

// Stored returns what of resp the record keeps: resp without the header
// fields StoreHeader turns away, and without its body (Omitted) when the
// body is longer than MaxResponseBody or was not kept. resp itself is
// not changed; it is returned as it is when all of it is kept.
func (l *Lease) Stored(resp *Response) *Response {
	keep := l.StoreHeader
	if keep == nil {
		keep = StorableHeader
	}
	omit := resp.Omitted || int64(len(resp.Body)) > cmp.Or(l.MaxResponseBody, DefaultMaxResponseBody)
	drop := false
	for name := range resp.Header {
		if !keep(name) {
			drop = true
			break
		}
	}
	if !omit && !drop {
		return resp
	}
	stored := &Response{Status: resp.Status, Header: resp.Header, Body: resp.Body}
	if omit {
		stored.Body, stored.Omitted = nil, true
	}
	if drop {
		stored.Header = make(http.Header, len(resp.Header))
		for name, vs := range resp.Header {
			if keep(name) {
				stored.Header[name] = vs
			}
		}
	}
	return stored
}

// StorableHeader reports whether a response header field is fit to be
// stored and replayed, the rule a Config without StoreHeader follows. It
// turns away, whatever their case:
//
//   - fields that carry credentials or sessions: Set-Cookie, Set-Cookie2,
//     Cookie, Authorization, Proxy-Authorization, Authentication-Info,
//     Proxy-Authentication-Info, and any field whose name contains
//     "auth", "token", "secret", "password", "passwd", "session",
//     "cookie", "credential", "api-key", "apikey" or "signature"
//     (X-Auth-Token, X-Api-Key, X-Session-Id, ...), but for the
//     challenges WWW-Authenticate and Proxy-Authenticate, which a stored
//     401 or 407 needs;
//   - hop-by-hop fields, which describe one connection: Connection,
//     Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding,
//     Upgrade;
//   - fields net/http writes for each response: Content-Length and
//     Date.
//
// A replay then carries the handler's other fields (Content-Type,
// Location, ETag, Cache-Control, ...). A service whose replays need a
// field this turns away, or that stores less, sets Config.StoreHeader.
func StorableHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
		"content-length", "date":
		return false
	case "www-authenticate", "proxy-authenticate":
		return true // a challenge, part of a 401 or 407, not a secret
	}
	for _, s := range secretWords {
		if strings.Contains(n, s) {
			return false
		}
	}
	return true
}

// secretWords mark a header field's name as one that carries a secret.
var secretWords = []string{"auth", "token", "secret", "password", "passwd", "session", "cookie", "credential", "api-key", "apikey", "signature"}
