package chaos

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/unherd/unherd/internal/pause"
)

// Transport returns an http.RoundTripper that injects the Injector's
// faults into requests sent through base (http.DefaultTransport if nil).
// An injected status is a response made on the spot, with an empty body
// and, if set, a Retry-After header; an injected error or reset is a
// transport error (nil response). Either way the request never reaches
// base, and its body is closed, as the RoundTripper contract asks. The
// added latency is waited first, within the request's context.
func (inj *Injector) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{inj: inj, base: base}
}

type transport struct {
	inj  *Injector
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	d := t.inj.decide()
	if !pause.For(req.Context(), d.delay) {
		closeBody(req)
		return nil, context.Cause(req.Context())
	}
	switch d.kind {
	case injectError:
		closeBody(req)
		return nil, injected(d.faults.Err)
	case injectReset:
		closeBody(req)
		return nil, resetError()
	case injectStatus:
		closeBody(req)
		return statusResponse(req, d.faults), nil
	}
	return t.base.RoundTrip(req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// statusResponse is the response of an injected status.
func statusResponse(req *http.Request, f *Faults) *http.Response {
	code := f.status()
	h := make(http.Header, 2)
	h.Set("Content-Length", "0")
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((f.RetryAfter+time.Second-1)/time.Second), 10))
	}
	return &http.Response{
		Status:        strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          http.NoBody,
		ContentLength: 0,
		Request:       req,
	}
}

// injectedError is an injected failure: it matches ErrInjected and the
// error it stands for.
type injectedError struct{ err error }

func (e *injectedError) Error() string {
	return ErrInjected.Error() + ": " + e.err.Error()
}
func (e *injectedError) Unwrap() []error { return []error{ErrInjected, e.err} }

// injected returns the error of an injected ErrorRate fault.
func injected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return &injectedError{err}
}

// errReset is what a connection reset looks like coming out of net/http.
var errReset error = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

func resetError() error { return &injectedError{errReset} }
