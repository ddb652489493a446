package unherdotel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
	"github.com/unherd/unherd/unherdotel"
)

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A call that a real loopback server answers with 503, 503 and then 200,
// through unherd's Transport over HTTPAttempts: the SDK's in-memory
// recorder holds three client spans, children of the caller's span, one
// per request sent, each with the HTTP conventions' attributes and, on
// the second and third, http.request.resend_count 1 and 2; the server
// saw each span's own trace context.
func TestHTTPAttemptSpans(t *testing.T) {
	var (
		hits    atomic.Int32
		mu      sync.Mutex
		parents []string // traceparent headers the server saw
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		parents = append(parents, r.Header.Get("traceparent"))
		mu.Unlock()
		if hits.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	rec, tp := recorded(t)
	prop := propagation.TraceContext{}
	restore := setPropagator(prop)
	defer restore()

	tr, err := unherdhttp.NewTransport(unherdotel.HTTPAttempts(nil, tp), unherdhttp.Config{
		Retry: retry.Config{Backoff: backoff.Schedule{Immediate: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "checkout")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/items?id=7", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	parent.End()

	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != "checkout" {
			spans = append(spans, s)
		}
	}
	if len(spans) != 3 {
		t.Fatalf("%d attempt spans, want 3", len(spans))
	}
	host, port := srv.Listener.Addr().String(), 0
	for i := len(host) - 1; i >= 0; i-- {
		if host[i] == ':' {
			port, _ = strconv.Atoi(host[i+1:])
			host = host[:i]
			break
		}
	}
	for i, s := range spans {
		a := attrs(s)
		t.Logf("span %d: %s %v parent %v: %v", i, s.Name(), s.SpanKind(), s.Parent().SpanID(), s.Attributes())
		want := map[attribute.Key]attribute.Value{
			"http.request.method":       attribute.StringValue("GET"),
			"url.full":                  attribute.StringValue(srv.URL + "/items?id=7"),
			"server.address":            attribute.StringValue(host),
			"server.port":               attribute.IntValue(port),
			"http.response.status_code": attribute.IntValue([]int{503, 503, 200}[i]),
			"network.protocol.version":  attribute.StringValue("1.1"),
		}
		if i > 0 {
			want["http.request.resend_count"] = attribute.IntValue(i)
		}
		if i < 2 {
			want["error.type"] = attribute.StringValue("503")
		}
		for k, v := range want {
			if got, ok := a[k]; !ok || got != v {
				t.Errorf("span %d: %s = %v, want %v", i, k, got.String(), v.String())
			}
		}
		for k := range a {
			if _, ok := want[k]; !ok {
				t.Errorf("span %d: unexpected attribute %s = %v", i, k, a[k].String())
			}
		}
		if s.Name() != "GET" || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %d: %q of kind %v, want GET, client", i, s.Name(), s.SpanKind())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d: parent %v, want the caller's span %v", i, s.Parent().SpanID(), parent.SpanContext().SpanID())
		}
		if wantErr := i < 2; (s.Status().Code == codes.Error) != wantErr {
			t.Errorf("span %d: status %v, want Error %v", i, s.Status().Code, wantErr)
		}
		sc := s.SpanContext()
		if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; parents[i] != want {
			t.Errorf("request %d carried traceparent %q, want its span's %q", i, parents[i], want)
		}
	}
}

// setPropagator sets the global propagator for a test and returns the
// function that puts the previous one back.
func setPropagator(p propagation.TextMapPropagator) func() {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(p)
	return func() { otel.SetTextMapPropagator(prev) }
}

// A redirect is a resend too: the request to the redirect's target
// counts it, and its retry counts both. A request that gets no response
// is a span with the error's type.
func TestHTTPAttemptSpansRedirectAndError(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusFound)
			return
		}
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	rec, tp := recorded(t)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := unherdhttp.NewTransport(unherdotel.HTTPAttempts(base, tp), unherdhttp.Config{
		Retry: retry.Config{Backoff: backoff.Schedule{Immediate: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get(srv.URL + "/old")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var got []string
	for _, s := range rec.Ended() {
		a := attrs(s)
		got = append(got, a["url.full"].AsString()[len(srv.URL):]+" resend "+strconv.Itoa(int(a["http.request.resend_count"].AsInt64())))
	}
	want := []string{"/old resend 0", "/new resend 1", "/new resend 2"}
	if len(got) != len(want) {
		t.Fatalf("spans %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d: %q, want %q", i, got[i], want[i])
		}
	}

	// Nothing listens: the span has no status code, an error type, Error.
	rec2, tp2 := recorded(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if _, err := unherdotel.HTTPAttempts(base, tp2).RoundTrip(req); err == nil {
		t.Fatal("a request to a closed port succeeded")
	}
	spans := rec2.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans for a failed request, want 1", len(spans))
	}
	a := attrs(spans[0])
	if _, ok := a["http.response.status_code"]; ok || a["error.type"].AsString() == "" || spans[0].Status().Code != codes.Error {
		t.Errorf("failed request's span: %v, status %v; want an error.type, no status code, Error", spans[0].Attributes(), spans[0].Status())
	}
}

// recorded returns a span recorder and a TracerProvider that feeds it,
// shut down when the test ends.
func recorded(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return rec, tp
}
