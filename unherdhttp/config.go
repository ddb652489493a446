package unherdhttp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/validate"
	"github.com/unherd/unherd/retry"
)

// Defaults applied to zero fields of [Config].
const (
	// DefaultConnectTimeout bounds getting a connection (dial and TLS
	// handshake). Envoy's cluster connect_timeout defaults to the same 5 s.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultMaxBufferedBody is the largest request body without GetBody
	// that is buffered so that it can be sent again.
	DefaultMaxBufferedBody = 64 << 10
	// DefaultMaxDrainedBody is how much of a discarded response body is
	// read before it is closed, so that its connection can be reused.
	DefaultMaxDrainedBody = 4 << 10
	// DefaultMaxIdleConnsPerHost is how many idle connections per host
	// the transport NewTransport builds for a nil base keeps, and
	// DefaultMaxIdleConns how many in all. net/http's own default is 2
	// per host: a busy client, with more than 2 requests in flight to one
	// dependency, then closes every connection beyond the second as its
	// request ends and dials a new one for the next, a TCP (and TLS)
	// handshake per request and a socket in TIME_WAIT on each side. 512
	// keeps a client's connections through bursts of up to 512 requests
	// in flight to one dependency (an open stream that stalls for a
	// garbage collection, then catches up, makes such bursts; with 128,
	// the reliability suite's open stream of 1,800 calls per second
	// sometimes dialed 4 connections per caller in 10 s); an idle HTTP/1
	// connection costs a socket, two goroutines and about 20 KiB, and
	// closes after 90 s unused (IdleConnTimeout), as in
	// http.DefaultTransport. Size your own base's pool to the requests you
	// have in flight.
	DefaultMaxIdleConnsPerHost = 512
	DefaultMaxIdleConns        = 2048
)

// AttemptHeader is the request header that numbers the requests sent for
// one logical request: "2" on the second (a retry or a hedge), "3" on the
// third, and so on. The first request carries no such header, so that a
// request that is never repeated goes out exactly as the caller built it.
// Servers can count or shed repeated traffic by it.
const AttemptHeader = "Unherd-Attempt"

// ErrInvalidConfig is wrapped by every error Validate and NewTransport
// return.
var ErrInvalidConfig = errors.New("unherdhttp: invalid config")

// Config configures a [Transport]. The zero value is the safe default:
// retry's defaults (3 attempts, full jitter from 50 ms, a token-bucket
// retry budget per Transport, a retry the budget refused still waiting,
// at the pace of the retries it had left, before the last response goes
// back (see
// retry.Config.OnBudgetExhausted),
// Retry-After honoured up to 30 s and a longer one ending the retries, a
// single attempt behind [Middleware]), for a
// nil base a pool of up to 512 idle connections per host, a 5 s connect
// timeout, no per-attempt timeout, 408, 429, 502, 503 and 504
// retried for idempotent requests, no hedging, and no automatic
// idempotency keys.
type Config struct {
	// Retry configures the retry loop; the Transport builds one
	// retry.Policy from it, once. Retry.Observer, if set, hears each
	// retry (observe.Retry) after the discarded response has been
	// drained and closed.
	//
	// Retry.AttemptTimeout bounds each attempt as the Transport sees one:
	// from the moment it has a connection (new or reused) to the arrival
	// of the response headers, that is writing the request and the
	// server's time to first byte. Getting the connection is bounded by
	// ConnectTimeout instead, and reading the body is not covered: bound
	// that with the request's context. With a base RoundTripper that is
	// not an *http.Transport (a wrapper of one included), the start of
	// the connection cannot be seen, and Retry.AttemptTimeout bounds the
	// whole attempt from its start, connection included. Its expiry is a
	// retryable timeout. Zero means none. Choose it from the latency
	// distribution: the percentile whose tail you accept as false
	// timeouts (p99 for 1% of attempts cut off and repeated), plus
	// headroom. Too tight and healthy but slow attempts are repeated,
	// adding load exactly when the server is slow.
	//
	// Retry.Timeouts, if set, supplies the attempt timeout at run time (an
	// adaptive timeout that tracks latency) and overrides
	// Retry.AttemptTimeout. It observes the interval the attempt timeout
	// bounds, with ok true for a response that is not a failure (a 503 or
	// a timeout is not). A *timeout.Adaptive fits.
	Retry retry.Config

	// ConnectTimeout bounds getting a connection: the TCP dial and, as a
	// separate bound, the TLS handshake. It applies through the transport
	// NewTransport builds when its base is nil; with a base of your own,
	// set your dialer's timeout and TLSHandshakeTimeout yourself. When an
	// attempt timeout is in force it also bounds the wait for a
	// connection from the pool. With a base that is not an
	// *http.Transport, which reports no connection, it plays no part in
	// the attempt timeout (see Retry). Zero means
	// DefaultConnectTimeout (5 s).
	//
	// Choose it from the network, not from the server: a few round trips
	// plus a TLS handshake on a loaded host. A cold handshake after a
	// deploy is slow for reasons that say nothing about the server's
	// health, which is why it is not charged to Retry.AttemptTimeout.
	ConnectTimeout time.Duration

	// Hedge, if set, hedges requests within each attempt of the retry
	// loop: when the request has had no answer for the hedger's delay, the
	// same request is sent again (with the attempt header) and the first
	// success wins; a failed request (a failure status or a transport
	// error) waits for the others, and only when all have failed does the
	// last failure go to the retry loop. The losers are cancelled and their
	// responses, if any, drained and closed. A hedger with
	// Config.NonFatal set follows its rule instead: a fatal failure
	// settles the attempt at once, a non-fatal one starts the next hedge
	// at once (see hedge.DoAttempt). Each hedge is a copy of the
	// attempt: the retry policy's guards admit it, its budget pays for it
	// and both hear how it ended, as they do every attempt; the Hedger's
	// own hedge.Config.Budget plays no part. Only requests that may be
	// repeated (see the package doc) and whose method HedgeMethod accepts
	// are hedged; their GetBody must be safe to call from several
	// goroutines at once, as http.NewRequest's is. One Hedger may serve
	// several Transports. Nil means no hedging.
	Hedge *hedge.Hedger

	// HedgeMethod reports whether requests of a method ("GET", "POST")
	// are hedged when Hedge is set. Nil means GET and HEAD.
	HedgeMethod func(method string) bool

	// NoRetry500 returns a 500 Internal Server Error, and any 5xx this
	// package does not name but 501 (505, 507, 520 to 527, ...), at once
	// instead of retrying it. By default they are retried, as
	// go-retryablehttp, the AWS SDKs and .NET's standard resilience
	// handler retry them: a 500 is often an overloaded or restarting
	// server, and the retry budget bounds what a server bug can cost.
	// Guards count them as server failures either way.
	NoRetry500 bool

	// AutoIdempotencyKey adds an Idempotency-Key header, a random UUIDv4
	// drawn once per logical request and sent as a quoted Structured
	// Field String, as the IETF draft defines the field, to POST and
	// PATCH requests that carry none, so that they become safe to retry. Only turn it on for
	// servers that honour the header.
	AutoIdempotencyKey bool

	// MaxBufferedBody is the largest request body without GetBody that is
	// read into memory so that it can be sent again. A larger body is sent
	// once, never retried. Zero means DefaultMaxBufferedBody (64 KiB); a
	// negative value disables buffering. Any positive value works, up to
	// math.MaxInt64 (buffer every body, however large: mind the memory).
	MaxBufferedBody int64

	// MaxDrainedBody is how much of a discarded response body (one that is
	// retried, or a hedge that lost) is read before it is closed, so that
	// its connection goes back to the pool. The reading is also bounded in
	// time, to 20 ms (a body slower than that is not worth its connection,
	// and is closed with it), so a server that sends part of a body and
	// stalls holds up the call for 20 ms per discarded response, not until
	// the caller's deadline. Zero means
	// DefaultMaxDrainedBody (4 KiB); a negative value closes without
	// reading.
	MaxDrainedBody int64

	// Classify, if set, is asked first about every attempt: resp is the
	// response (err nil) or err the transport error (resp nil). It returns
	// ok false to leave the attempt to the default rules. With ok true, a
	// response is a failure of the returned class (Permanent: stop and
	// return it to the caller; Transient, Timeout, Throttled: retry it), and
	// an error is classified as returned. Replay safety still holds: a
	// request that may have reached the server is repeated only if its
	// method is idempotent or it carries an Idempotency-Key.
	Classify func(resp *http.Response, err error) (c failure.Class, ok bool)
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	if err := validate.NonNegative(ErrInvalidConfig,
		validate.Field{Name: "ConnectTimeout", Value: c.ConnectTimeout, Hint: "; use 0 for the default of 5s"},
	); err != nil {
		return err
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("%w: Retry: %w", ErrInvalidConfig, err)
	}
	return nil
}

// newBase returns the base transport of a nil base: a clone of
// http.DefaultTransport (or, if a program replaced it with something other
// than an *http.Transport, a transport with the same settings), whose dial
// and TLS handshake are bounded by connect, and whose idle pool is at
// least DefaultMaxIdleConnsPerHost per host and DefaultMaxIdleConns in
// all.
func newBase(connect time.Duration) *http.Transport {
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = dt.Clone()
	} else {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ForceAttemptHTTP2:     true,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	tr.DialContext = d.DialContext
	tr.TLSHandshakeTimeout = connect
	tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, DefaultMaxIdleConnsPerHost)
	if tr.MaxIdleConns != 0 { // zero is no limit
		tr.MaxIdleConns = max(tr.MaxIdleConns, DefaultMaxIdleConns)
	}
	return tr
}
