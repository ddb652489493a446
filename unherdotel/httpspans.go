package unherdotel

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/unherd/unherd/unherdhttp"
)

// tracerName is the instrumentation scope of the attempt spans.
const tracerName = "github.com/unherd/unherd/unherdotel"

// HTTPAttempts returns a RoundTripper that makes every request it sends an
// HTTP client span of its own, as OpenTelemetry's HTTP semantic
// conventions ask of a client that sends a request again
// (https://opentelemetry.io/docs/specs/semconv/http/http-spans/). Put it
// under an unherdhttp.Transport, as its base, so that each attempt (the
// first, each retry and each hedge) is one span, a child of the span in
// the request's context:
//
//	base := unherdotel.HTTPAttempts(nil, tp)
//	tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{})
//	client := &http.Client{Transport: tr}
//
// A nil base means http.DefaultTransport (then the Transport cannot see
// when an attempt has its connection, and its attempt timeout covers the
// connection too; pass an *http.Transport of your own to keep them
// apart); a nil tp means the global TracerProvider.
//
// Each span is named after the method and carries the conventions'
// attributes: http.request.method (and http.request.method_original for a
// method they do not know), url.full (without user information),
// server.address, server.port, http.response.status_code,
// network.protocol.version, error.type (the status code for a status of
// 400 or more, else the error's type) and, on every request sent again,
// http.request.resend_count: the unherdhttp.AttemptHeader's number less
// one, plus the redirects the http.Client followed to reach this request
// (retries of an earlier hop of a redirect are not counted: the request
// does not carry them). A status of 400 or more, or an error, sets the
// span's status to Error. The span ends when the response body is closed
// or read to its end, or at once when there is no response. The request
// sent carries the span's context in the global propagator's headers
// (otel.GetTextMapPropagator), on a clone: the request passed in is not
// modified.
func HTTPAttempts(base http.RoundTripper, tp trace.TracerProvider) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &attemptSpans{base: base, tracer: tp.Tracer(tracerName)}
}

type attemptSpans struct {
	base   http.RoundTripper
	tracer trace.Tracer
}

// RoundTrip sends req through the base within a client span.
func (a *attemptSpans) RoundTrip(req *http.Request) (*http.Response, error) {
	attrs := make([]attribute.KeyValue, 0, 8)
	method, known := methodAttr(req.Method)
	attrs = append(attrs, method)
	if !known {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(req.Method))
	}
	if req.URL != nil {
		attrs = append(attrs, semconv.URLFull(redacted(req.URL)))
		host, port := hostPort(req.URL)
		attrs = append(attrs, semconv.ServerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	if n := resendCount(req); n > 0 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(n))
	}
	name := req.Method
	if !known {
		name = "HTTP"
	}
	ctx, span := a.tracer.Start(req.Context(), name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	out := req.Clone(ctx)
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := a.base.RoundTrip(out)
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return resp, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if v := protocolVersion(resp); v != "" {
		span.SetAttributes(semconv.NetworkProtocolVersion(v))
	}
	if resp.StatusCode >= 400 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode)))
		span.SetStatus(codes.Error, "")
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		span.End()
		return resp, nil
	}
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// resendCount is how many times req has been sent before, as far as it
// shows: unherdhttp's attempt header (2 on the second request of a call)
// and the redirects the http.Client followed to it.
func resendCount(req *http.Request) int {
	n := 0
	if v := req.Header.Get(unherdhttp.AttemptHeader); v != "" {
		if a, err := strconv.Atoi(v); err == nil && a > 1 {
			n = a - 1
		}
	}
	for r := req.Response; r != nil && r.Request != nil; r = r.Request.Response {
		n++
	}
	return n
}

// methodAttr is the http.request.method attribute of m: m itself if the
// conventions know it, "_OTHER" and false if not.
func methodAttr(m string) (attribute.KeyValue, bool) {
	switch m {
	case http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions,
		http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace:
		return semconv.HTTPRequestMethodKey.String(m), true
	case "":
		return semconv.HTTPRequestMethodKey.String(http.MethodGet), true // net/http's meaning of ""
	}
	return semconv.HTTPRequestMethodKey.String("_OTHER"), false
}

// redacted is u without its user information, as url.full must be.
func redacted(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = nil
	return c.String()
}

// hostPort returns u's host and port, the port from the scheme when u
// names none (0 when the scheme has no default).
func hostPort(u *url.URL) (string, int) {
	host, p := u.Hostname(), u.Port()
	if p == "" {
		switch u.Scheme {
		case "http":
			return host, 80
		case "https":
			return host, 443
		}
		return host, 0
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

// protocolVersion is network.protocol.version for resp: "1.1", "2".
func protocolVersion(resp *http.Response) string {
	switch {
	case resp.ProtoMajor == 0:
		return ""
	case resp.ProtoMajor >= 2 && resp.ProtoMinor == 0:
		return strconv.Itoa(resp.ProtoMajor)
	}
	return strconv.Itoa(resp.ProtoMajor) + "." + strconv.Itoa(resp.ProtoMinor)
}

// errorType is error.type for a transport error: "timeout" for one that
// says so, else the error's Go type.
func errorType(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return semconv.ErrorType(err).Value.AsString()
}

// spanBody ends its span when the body is closed or read to its end.
type spanBody struct {
	io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *spanBody) end() { b.once.Do(func() { b.span.End() }) }

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.end()
	} else if err != nil {
		b.span.SetStatus(codes.Error, err.Error())
		b.end()
	}
	return n, err
}

func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}
