package idempotency

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Defaults applied to zero fields of [Config].
const (
	// DefaultTTL is how long a completed record is kept: Stripe's 24 h.
	DefaultTTL = 24 * time.Hour
	// DefaultLease is the in-flight lease. The middleware renews it
	// every third of its length while the handler runs, so it only bounds
	// how long a key stays blocked after its process died.
	DefaultLease = 30 * time.Second
	// DefaultMaxRequestBody is the largest request body fingerprinted; a
	// larger one is refused with 413.
	DefaultMaxRequestBody = 1 << 20
	// DefaultMaxResponseBody is the largest response body stored.
	DefaultMaxResponseBody = 1 << 20
	// DefaultStoreTimeout bounds each call to the store.
	DefaultStoreTimeout = 2 * time.Second
	// DefaultWait is how long a duplicate of a request still in flight
	// waits for the first to finish before it is asked to come back: long
	// enough for most handlers to finish, so that the duplicate gets the
	// answer of the one execution, and well within a lease.
	DefaultWait = 5 * time.Second
	// InFlightRetryAfter is the delay a duplicate still in flight after
	// its wait is asked to wait before it tries again: the Retry-After of
	// the 409 and the gRPC pushback. The client's own jittered backoff
	// stays a floor over it.
	InFlightRetryAfter = time.Second
)

// Header names.
const (
	// KeyHeader is the request header of the draft.
	KeyHeader = "Idempotency-Key"
	// ReplayedHeader is set to "true" on a response replayed from a
	// completed record, as Stripe names it.
	ReplayedHeader = "Idempotent-Replayed"
)

// ErrInvalidConfig is wrapped by every error New returns.
var ErrInvalidConfig = errors.New("idempotency: invalid config")

// Config configures a [Middleware]. The zero value is usable with a
// Store: keys honoured on POST and PATCH, optional, shared by every
// caller (set Principal), records kept 24 h, a 30 s lease renewed while
// the handler runs, a duplicate of a running request waiting up to 5 s
// for its answer (then 409 with Retry-After), bodies up to 1 MiB fingerprinted and stored, and the store's failure
// answered 503 (fail closed).
type Config struct {
	// Store keeps the records. Nil means a new Memory store with its
	// defaults, which serves one process only.
	Store Store

	// Principal returns who is calling (an account or API key ID, after
	// authentication), so that two callers' keys never collide. The
	// middleware also names it to the store in the claim's context
	// (WithPrincipal), so that a store can bound each caller's share of
	// it, as Memory does (MemoryConfig.MaxShare). Nil means every caller
	// shares one key space, and one share: only right when keys are
	// random UUIDs and callers trust each other.
	Principal func(*http.Request) string

	// Methods lists the methods whose keys are honoured; requests of
	// other methods pass through untouched. Nil means POST and PATCH,
	// the methods the draft names.
	Methods []string

	// Required makes a request of one of Methods without a key a 400.
	// Wrap only the routes that need keys with a Middleware that requires
	// them.
	Required bool

	// StrictSyntax accepts only the draft's syntax, a Structured Field
	// String ("..." in double quotes). By default a bare key, as most
	// clients send it, is accepted too; see ParseKey.
	StrictSyntax bool

	// FingerprintHeaders names the request headers that, besides the
	// method, escaped path, query and body, make up the fingerprint; a
	// request that reuses a key with a different fingerprint is a 422.
	// Nil means Content-Type. The name or address the request was sent
	// to (Host) is not part of it: a retry that reaches another instance,
	// or the service by another name, replays. Keep tenants or virtual
	// hosts apart with Principal, never with the fingerprint.
	FingerprintHeaders []string

	// TTL is how long a completed record is kept and replayed. Zero
	// means DefaultTTL (24 h). A Memory store that needs room evicts a
	// record sooner, once past its MemoryConfig.MinRetention.
	TTL time.Duration

	// Lease is the in-flight lease of a shared store; see DefaultLease.
	// Zero means 30 s. With a Memory store, which dies with the process
	// that holds its leases, a claim lasts until its handler returns and
	// is not renewed.
	Lease time.Duration

	// Wait is how long a request whose key is in flight for the same
	// request waits for the first to finish (KeeperConfig.Wait): when the
	// first completes, its response is replayed; when it released the
	// key, the duplicate runs itself; when the wait ends first, or the
	// client goes away, the answer is 409 "key-in-flight" with
	// Retry-After (InFlightRetryAfter), which unherdhttp's Transport
	// retries. Zero means DefaultWait (5 s); a negative Wait means 409 at
	// once, as the draft describes.
	Wait time.Duration

	// HandlerTimeout, if set, bounds the handler through its request
	// context; a handler still running when it expires has its key
	// released and its response replaced by a 503 (the handler must stop
	// on its context: its side effects are not undone). Zero means none.
	HandlerTimeout time.Duration

	// MaxRequestBody is the largest request body read and fingerprinted;
	// larger ones are refused with 413. Zero means DefaultMaxRequestBody.
	MaxRequestBody int64

	// MaxResponseBody is the largest response body stored. A larger
	// response is sent to the client as it is written, and its record is
	// completed without the body (Response.Omitted): a later request
	// with the key is answered 409 "replay unavailable" rather than run
	// again. Zero means DefaultMaxResponseBody.
	MaxResponseBody int64

	// StoreTimeout bounds each store call. Zero means
	// DefaultStoreTimeout.
	StoreTimeout time.Duration

	// FailOpen runs the handler without idempotency when the store
	// cannot be reached to claim a key, instead of answering 503: more
	// availability, and duplicates when retries meet a store outage. A
	// store that answers it is full (ErrStoreFull) is not an outage, and
	// is answered 503 all the same: otherwise a flood of keys would turn
	// idempotency off for every caller.
	FailOpen bool

	// StoreHeader reports whether a response header field is stored with
	// the record and sent again on a replay; the first answer always
	// carries every field the handler set. Nil means StorableHeader,
	// which keeps credentials, sessions and hop-by-hop fields out of the
	// store.
	StoreHeader func(name string) bool

	// OnError, if set, receives store errors the client is not told
	// about: a record not completed or released, a lease lost while the
	// handler ran.
	OnError func(r *http.Request, err error)
}

// keeper returns the part of c a Keeper takes.
func (c *Config) keeper() KeeperConfig {
	return KeeperConfig{Store: c.Store, TTL: c.TTL, Lease: c.Lease, StoreTimeout: c.StoreTimeout, MaxResponseBody: c.MaxResponseBody, StoreHeader: c.StoreHeader, Wait: c.Wait}
}

// validate checks what is the middleware's own; NewKeeper checks the rest.
func (c *Config) validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"HandlerTimeout", c.HandlerTimeout}} {
		if f.d < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, f.name, f.d)
		}
	}
	if c.MaxRequestBody < 0 {
		return fmt.Errorf("%w: MaxRequestBody %d is negative", ErrInvalidConfig, c.MaxRequestBody)
	}
	return nil
}
