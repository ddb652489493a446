package unherdhttp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/errtree"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// StatusError is the error of an attempt whose response the Transport
// treats as a failure: a retryable status such as 503, or a permanent one
// such as 404. The retry loop sees it, so the Retry.Observer (its
// event's Err) or a guard can read the status; the caller normally gets the response itself
// instead.
type StatusError struct {
	// StatusCode is the response's status code.
	StatusCode int
	resp       *http.Response
	discarded  bool
}

// Error returns "unherdhttp: response status " and the response's status
// line, such as "503 Service Unavailable".
func (e *StatusError) Error() string {
	return "unherdhttp: response status " + e.resp.Status
}

// discard drains and closes the response body, once.
func (e *StatusError) discard(limit int64) {
	if !e.discarded {
		e.discarded = true
		drain(e.resp.Body, limit)
	}
}

// NotReplayedError is the error of a failed attempt that was not repeated
// because the request may have reached the server and is not safe to
// send twice: a POST or PATCH without an Idempotency-Key that failed after
// it was written, or a request whose body could not be rewound.
type NotReplayedError struct {
	// Method is the request's method ("GET" for an empty one).
	Method string
	// Err is the attempt's own error: a transport error, or a
	// *StatusError for a response.
	Err error
}

// Error names the method and why it was not sent again, followed by the
// attempt's error.
func (e *NotReplayedError) Error() string {
	return "unherdhttp: " + e.Method + " not retried (not safe to send twice): " + e.Err.Error()
}

// Unwrap returns the attempt's error.
func (e *NotReplayedError) Unwrap() error { return e.Err }

// idempotentMethod reports whether RFC 9110, section 9.2.2 calls method
// idempotent (CONNECT, POST and PATCH are not). An empty method is GET.
func idempotentMethod(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// hasIdempotencyKey reports whether h carries an idempotency key, by the
// same rule as net/http's own replay decision.
func hasIdempotencyKey(h http.Header) bool {
	if h == nil {
		return false
	}
	_, a := h[idempotency.KeyHeader]
	_, b := h["X-Idempotency-Key"]
	return a || b
}

// neverSent reports whether err proves that the request never left: the
// connection could not be made.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// withSchemeMismatch returns err so that errors.Is(err,
// http.ErrSchemeMismatch) holds when it is the TLS error of an https
// request answered by a plain HTTP server. http.Transport returns a
// tls.RecordHeaderError there, which only http.Client turns into
// ErrSchemeMismatch, by a type assertion on the RoundTripper's error that
// the retry loop's wrapping would defeat; this keeps what plain net/http
// gives callers, and the TLS error too.
func withSchemeMismatch(err error) error {
	if rh, ok := errtree.Find[tls.RecordHeaderError](err); ok && string(rh.RecordHeader[:]) == "HTTP/" {
		return &schemeMismatchError{err}
	}
	return err
}

type schemeMismatchError struct{ err error }

func (e *schemeMismatchError) Error() string {
	return http.ErrSchemeMismatch.Error() + ": " + e.err.Error()
}
func (e *schemeMismatchError) Unwrap() []error { return []error{http.ErrSchemeMismatch, e.err} }

// permanentTransportError reports errors that repeating the request
// cannot fix: certificates that do not verify, a TLS client talking to a
// plain HTTP server.
func permanentTransportError(err error) bool {
	if errors.Is(err, http.ErrSchemeMismatch) {
		return true
	}
	if _, ok := errtree.Find[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errtree.Find[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errtree.Find[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errtree.Find[x509.CertificateInvalidError](err); ok {
		return true
	}
	return false
}

// statusClass is the default classification of a response,
// failure.OfHTTPStatus: failed is false for a response to hand back as it
// is. A 500, and any 5xx the table does not name (505, 507, 520 to 527,
// ...), is a server failure (Transient, so guards count it), retried
// unless NoRetry500; 501 Not Implemented is permanent.
func (t *Transport) statusClass(code int) (c failure.Class, failed bool) {
	return failure.OfHTTPStatus(code)
}

// serverFailure reports the statuses NoRetry500 keeps from being retried:
// 500 and the 5xx this package does not name.
func serverFailure(code int) bool {
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusNotImplemented:
		return false
	}
	return code >= 500
}

// responseClass classifies a response by the Classify hook, then the
// default rules; failed is false for a response to hand back as it is,
// and hooked is true when the hook decided.
func (t *Transport) responseClass(resp *http.Response) (c failure.Class, failed, hooked bool) {
	if t.classify != nil {
		if hc, ok := t.classify(resp, nil); ok {
			return hc, true, true
		}
	}
	c, failed = t.statusClass(resp.StatusCode)
	return c, failed, false
}

// judgeResponse turns a response into the attempt's result for the retry
// loop: the response itself, or a *StatusError judged with its class and
// any Retry-After delay (retry.Judge).
func (t *Transport) judgeResponse(c *call, resp *http.Response) (*http.Response, error) {
	class, failed, hooked := t.responseClass(resp)
	if !failed {
		return resp, nil
	}
	if !hooked && keyInFlight(c, resp) {
		// The draft's 409 for a key whose first request still runs, with
		// the delay after which to come back: the one execution's answer
		// is on its way, so the retry waits for it rather than ending the
		// call with a conflict.
		class = failure.Transient
	}
	se := &StatusError{StatusCode: resp.StatusCode, resp: resp}
	v := retry.Verdict{Class: class}
	switch {
	case class == failure.Permanent:
		return nil, retry.Judge(se, v)
	case !c.replayable || c.once:
		// The server has seen the request, or its body is gone: stop, but
		// let budgets and guards count the failure as what it is.
		v.Final = true
		return nil, retry.Judge(&NotReplayedError{Method: c.method(), Err: se}, v)
	case serverFailure(resp.StatusCode) && t.noRetry500 && !hooked:
		// NoRetry500: a server failure, not retried. A hook that
		// classified the status itself has overridden it.
		v.Final = true
		return nil, retry.Judge(se, v)
	}
	if h := resp.Header.Get("Retry-After"); h != "" {
		if d, ok := ParseRetryAfter(h, time.Now()); ok {
			// Retry-After makes any failure a throttling one.
			return nil, retry.Judge(se, retry.Verdict{Class: failure.Throttled, Delay: d, HasDelay: true})
		}
	}
	if h := resp.Header.Get(amzRetryAfterHeader); h != "" {
		if d, ok := parseAmzRetryAfter(h); ok {
			// Unlike Retry-After, x-amz-retry-after keeps the class: a 500
			// that carries it stays a server failure, as in the SDKs.
			v.Delay, v.HasDelay = d, true
		}
	}
	return nil, retry.Judge(se, v)
}

// keyInFlight reports whether resp is the answer of an idempotency-key
// server to a request whose key's first request is still being served:
// 409 Conflict with a Retry-After, to a request that carries a key
// (idempotency.CodeKeyInFlight, in the draft's words "a request with the
// same key is in progress"). A 409 without Retry-After, or to a request
// without a key, is a conflict no retry resolves.
func keyInFlight(c *call, resp *http.Response) bool {
	return resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != "" &&
		(c.key != "" || hasIdempotencyKey(c.req.Header))
}

// judgeError classifies a transport error of areq, the request sent.
// timedOut says the attempt's own timeout ended it, and sent whether the
// request may have been written.
func (t *Transport) judgeError(c *call, areq *http.Request, err error, timedOut, sent bool) error {
	if why := refusal(areq, t.traced); why != "" {
		// net/http refused it before dialling: the caller's bug, which no
		// retry fixes and no guard or budget should count.
		return &invalidRequestError{why: why, err: err}
	}
	if timedOut {
		err = engine.MarkAttemptTimeout(err)
	}
	err = withSchemeMismatch(err)
	if c.once || (sent && !c.replayable && !neverSent(err)) {
		nr := &NotReplayedError{Method: c.method(), Err: err}
		if permanentTransportError(err) {
			return retry.MarkPermanent(nr)
		}
		return retry.Judge(nr, retry.Verdict{Final: true})
	}
	if t.classify != nil {
		if class, ok := t.classify(nil, err); ok {
			return retry.Judge(err, retry.Verdict{Class: class})
		}
	}
	if permanentTransportError(err) {
		return retry.MarkPermanent(err)
	}
	return err
}
