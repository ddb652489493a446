package unherdhttp

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/errtree"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// Transport is an http.RoundTripper that retries failed attempts by a
// retry.Policy, within the rules of package doc. It keeps the
// RoundTripper contract: it never modifies the caller's request, it is
// safe for concurrent use, it returns a nil error whenever it returns a
// response, and the response body stays readable after RoundTrip returns.
// Build one per dependency with NewTransport and share it.
type Transport struct {
	base           http.RoundTripper
	policy         *retry.Policy
	timer          engine.AttemptTimer // Config.Retry.AttemptTimeout and Timeouts
	connectTimeout time.Duration
	noRetry500     bool
	autoKey        bool
	maxBuffered    int64
	maxDrained     int64
	classify       func(*http.Response, error) (failure.Class, bool)
	traced         bool // base is an *http.Transport, which reports GotConn; else the attempt timeout bounds the whole attempt
	hedger         *hedge.Hedger
	hedgeMethod    func(method string) bool
}

// NewTransport validates cfg and returns a Transport that sends attempts
// through base. A nil base means a clone of http.DefaultTransport whose
// dial and TLS handshake are bounded by cfg.ConnectTimeout and which keeps
// up to DefaultMaxIdleConnsPerHost idle connections per host (see
// DefaultMaxIdleConnsPerHost).
func NewTransport(base http.RoundTripper, cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Transport{
		base:           base,
		timer:          engine.AttemptTimer{Timeout: cfg.Retry.AttemptTimeout, Source: cfg.Retry.Timeouts},
		connectTimeout: cmp.Or(cfg.ConnectTimeout, DefaultConnectTimeout),
		noRetry500:     cfg.NoRetry500,
		autoKey:        cfg.AutoIdempotencyKey,
		maxBuffered:    cmp.Or(cfg.MaxBufferedBody, DefaultMaxBufferedBody),
		maxDrained:     cmp.Or(cfg.MaxDrainedBody, DefaultMaxDrainedBody),
		classify:       cfg.Classify,
	}
	if base == nil {
		t.base = newBase(t.connectTimeout)
	}
	_, t.traced = t.base.(*http.Transport)
	if cfg.Hedge != nil {
		t.hedger = cfg.Hedge
		t.hedgeMethod = cfg.HedgeMethod
		if t.hedgeMethod == nil {
			t.hedgeMethod = getOrHead
		}
	}
	// The Transport times its attempts itself, from the connection: the
	// policy must not time them again from their start.
	rc := cfg.Retry
	rc.AttemptTimeout, rc.Timeouts = 0, nil
	rc.Observer = observe.Multi(observe.On(observe.Retry, t.discard), cfg.Retry.Observer)
	p, err := retry.New(rc)
	if err != nil {
		return nil, err
	}
	t.policy = p
	return t, nil
}

// getOrHead is the default Config.HedgeMethod.
func getOrHead(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// CloseIdleConnections closes the idle connections of the base transport,
// if it has such a method; http.Client.CloseIdleConnections reaches it.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// discard runs before every wait, ahead of the caller's observer: the
// failed attempt's response, if any, is drained and closed so that its
// connection is reused during the wait.
func (t *Transport) discard(ev observe.Event) {
	if se, ok := errtree.Find[*StatusError](ev.Err); ok {
		se.discard(t.maxDrained)
	}
}

// RoundTrip sends req, repeating it as the policy allows. When the loop
// stops on a response (a retryable status with no attempts, budget or
// time left, a Retry-After longer than retry.Config.MaxServerDelay, or a
// permanent status), that last response is returned with a
// nil error. When it stops on a transport error, the error is the
// policy's *retry.Error, through which errors.Is and errors.As reach the
// last attempt's error.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := call{t: t, req: req}
	if err := c.prepare(); err != nil {
		return nil, err
	}
	if c.hedged {
		return roundTripHedged(&c)
	}
	// c stays on the stack: nothing keeps a pointer to it beyond the call.
	resp, err := retry.DoValue(req.Context(), t.policy, c.attempt)
	return c.finish(resp, err)
}

// roundTripHedged is RoundTrip for a hedged request, whose state hedges
// on other goroutines share, and which therefore lives on the heap.
func roundTripHedged(c0 *call) (*http.Response, error) {
	c := new(call)
	*c = *c0
	resp, err := retry.DoValue(c.req.Context(), c.t.policy, c.attemptHedged)
	return c.finish(resp, err)
}

// call is the state of one logical request across its attempts.
type call struct {
	t    *Transport
	req  *http.Request
	sent int32 // requests sent so far, retries and hedges included; atomic

	// replayable: the request may be sent again after it reached the
	// server (idempotent method or idempotency key).
	replayable bool
	// once: the body cannot be rewound; nothing is sent twice.
	once bool
	// hedged: attempts are hedged.
	hedged bool
	key    string        // an automatic idempotency key, or ""
	buf    []byte        // the buffered body, when it had no GetBody
	body   io.ReadCloser // a body to send once, of which a prefix was read
}

func (c *call) method() string {
	if c.req.Method == "" {
		return http.MethodGet
	}
	return c.req.Method
}

// prepare decides what may be repeated and makes the body rewindable.
func (c *call) prepare() error {
	req, t := c.req, c.t
	c.replayable = idempotentMethod(req.Method) || hasIdempotencyKey(req.Header)
	if !c.replayable && t.autoKey && (req.Method == http.MethodPost || req.Method == http.MethodPatch) {
		c.key = newKey()
		c.replayable = true
	}
	c.hedged = c.replayable && t.hedger != nil && t.hedgeMethod(c.method())
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil || !c.mayRetry() && !c.hedged {
		return nil
	}
	if t.maxBuffered < 0 || req.ContentLength > t.maxBuffered {
		c.once, c.hedged = true, false
		return nil
	}
	buf, once, err := bufferBody(req.Body, t.maxBuffered)
	if err != nil {
		return err
	}
	c.buf, c.body = buf, once
	if once != nil {
		c.once, c.hedged = true, false
	}
	return nil
}

// mayRetry reports whether the policy may make more than one attempt.
func (c *call) mayRetry() bool {
	return engine.AttemptLimit(c.req.Context(), c.t.policy) > 1
}

// finish turns the loop's result into RoundTrip's: the response; or the
// last response, if the loop stopped on one that is still unread; or the
// error.
func (c *call) finish(resp *http.Response, err error) (*http.Response, error) {
	if err == nil {
		return resp, nil
	}
	if atomic.LoadInt32(&c.sent) == 0 {
		// A guard rejected the first attempt: the body was never sent,
		// and RoundTrip must close it all the same.
		if c.body != nil {
			_ = c.body.Close()
		} else if c.req.Body != nil && c.buf == nil {
			_ = c.req.Body.Close()
		}
	}
	var re *retry.Error
	if !errors.As(err, &re) {
		return nil, err
	}
	se, ok := errtree.Find[*StatusError](re.Last)
	if !ok || se.discarded {
		return nil, err
	}
	if re.Reason == retry.ErrCancelled {
		se.discard(c.t.maxDrained)
		return nil, err
	}
	return se.resp, nil
}

// attempt makes one attempt of the retry loop. ctx is the request's
// context: the policy has no attempt timeout of its own.
func (c *call) attempt(ctx context.Context) (*http.Response, error) {
	return c.send(ctx, ctx)
}

// discardResponse closes a hedge's response that lost.
func (t *Transport) discardResponse(resp *http.Response) { drain(resp.Body, t.maxDrained) }

// send sends one request and judges its outcome: the response to hand
// back, or the judged *StatusError or transport error. hctx is the hedge's context (ctx itself when
// not hedging); its end, when another hedge won, ends this request too.
func (c *call) send(ctx, hctx context.Context) (*http.Response, error) {
	n := atomic.AddInt32(&c.sent, 1)
	areq, err := c.build(ctx, n)
	if err != nil {
		return nil, err
	}
	t := c.t
	if t.timer.Timeout <= 0 && t.timer.Source == nil && hctx == ctx {
		resp, err := t.base.RoundTrip(areq)
		if err != nil {
			return nil, t.judgeError(c, areq, err, false, true)
		}
		return t.judgeResponse(c, resp)
	}
	return c.sendBounded(ctx, hctx, areq)
}

// build returns the request for attempt n: the caller's own request when
// nothing needs to change, or a clone with a fresh body and the attempt
// and idempotency-key headers.
func (c *call) build(ctx context.Context, n int32) (*http.Request, error) {
	if n > 1 && c.once {
		// Unreachable through the loop: a body that cannot be rewound
		// makes every failure permanent. Kept so that no path sends a
		// consumed body.
		return nil, retry.MarkPermanent(&NotReplayedError{Method: c.method(), Err: errNoRewind})
	}
	timeout, bounded := c.t.attemptBound(ctx)
	prio, marked := limit.PriorityFromContext(ctx), false
	if prio != limit.Normal {
		marked = c.req.Header.Get(limit.PriorityHeader) == ""
	}
	if n == 1 && c.key == "" && c.buf == nil && c.body == nil && !bounded && !marked {
		return c.req, nil
	}
	areq := c.req.Clone(ctx)
	if areq.Header == nil {
		areq.Header = make(http.Header, 3)
	}
	if n > 1 {
		areq.Header.Set(AttemptHeader, strconv.Itoa(int(n)))
	}
	if bounded {
		areq.Header.Set(TimeoutHeader, formatTimeout(timeout))
	}
	if marked {
		areq.Header.Set(limit.PriorityHeader, prio.String())
	}
	if c.key != "" {
		areq.Header.Set(idempotency.KeyHeader, c.key)
	}
	switch {
	case c.buf != nil:
		areq.Body = bytesBody(c.buf)
		buf := c.buf
		areq.GetBody = func() (io.ReadCloser, error) { return bytesBody(buf), nil }
	case c.body != nil:
		areq.Body = c.body
	case n > 1 && c.req.GetBody != nil:
		body, err := c.req.GetBody()
		if err != nil {
			return nil, retry.MarkPermanent(err)
		}
		areq.Body = body
	}
	return areq, nil
}

var errNoRewind = errors.New("unherdhttp: request body cannot be rewound")

// sendBounded is send for a bounded or hedged request. It sends areq
// under an attempt of its own (engine.AttemptTimer.StartAfter), whose
// context lives until the response body is closed. That context ends
// when the attempt timeout (if any) expires, the timeout starting when
// the attempt has a connection, ConnectTimeout bounding the wait for one
// (with a base that reports no connection, the timeout starting with the
// attempt); and when hctx ends, because another hedge won. The
// TimeoutSource, if any, observes the interval the timeout bounds.
func (c *call) sendBounded(ctx, hctx context.Context, areq *http.Request) (*http.Response, error) {
	t := c.t
	// One allocation holds the attempt, the trace and the body wrapper.
	a := new(attemptClock)
	var lead time.Duration
	if t.traced {
		lead = t.connectTimeout
	}
	a.att = t.timer.StartAfter(ctx, lead)
	a.body.att = &a.att
	actx := a.att.Context()
	if hctx != ctx {
		stop := context.AfterFunc(hctx, func() { a.att.Cancel(context.Cause(hctx)) })
		defer stop()
	}
	// Only a connection reported through httptrace proves that nothing
	// was sent before it, and moves the timeout from the connect phase to
	// the request phase; net/http's Transport reports it, other base
	// transports may not.
	traced := t.traced && (t.timer.Timeout > 0 || t.timer.Source != nil)
	if traced {
		a.trace.GotConn = a.gotConn
		actx = httptrace.WithClientTrace(actx, &a.trace)
	}
	resp, err := t.base.RoundTrip(areq.WithContext(actx))
	a.att.Commit() // stops the timer: the response, if any, lives on
	timedOut := a.att.TimedOut()
	if err == nil && timedOut {
		// Headers arrived as the timer fired: the context is gone, so
		// the body would fail mid-read. Count it as the timeout it is.
		drain(resp.Body, 0)
		resp, err = nil, retry.ErrAttemptTimeout
	}
	if err != nil {
		sent := a.connected.Load() || !traced
		err = a.att.End(t.judgeError(c, areq, err, timedOut, sent))
		a.att.Cancel(nil)
		return nil, err
	}
	switch body := resp.Body.(type) {
	case nil:
		a.att.Cancel(nil)
	case io.ReadWriteCloser: // a 101 Switching Protocols connection
		resp.Body = &cancelRWBody{cancelBody{body, &a.att}, body}
	default:
		a.body.ReadCloser = body
		resp.Body = &a.body
	}
	resp, err = t.judgeResponse(c, resp)
	// Only answers that are not failures are latency samples: a fast 503
	// says nothing about how long an answer takes. A failure's response
	// stays readable: the caller may get it, and discard closes it.
	return resp, a.att.End(err)
}

// attemptClock is the state of a bounded attempt: the attempt, whose
// timer moves from the connect phase to the request phase when it gets
// its connection (net/http reports it through httptrace, before it
// writes the request and before RoundTrip returns), and its response
// body wrapper.
type attemptClock struct {
	att       engine.Attempt
	connected atomic.Bool
	trace     httptrace.ClientTrace
	body      cancelBody
}

func (a *attemptClock) gotConn(httptrace.GotConnInfo) {
	if a.connected.CompareAndSwap(false, true) {
		a.att.Restart()
	}
}

// newKey returns a random UUID (version 4, RFC 9562) as the header's
// value: a Structured Field String (RFC 8941), quoted, as the IETF
// Idempotency-Key draft defines the field, so that a server that parses
// the field strictly accepts it.
func newKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // never fails; see crypto/rand.Read
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	var b [38]byte
	b[0], b[37] = '"', '"'
	j := 1
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[x>>4], hex[x&0x0f]
		j += 2
	}
	return string(b[:])
}
