package unherdhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// benchTransports returns the round trippers compared side by side: a
// plain http.Transport, the same under a Transport with the default
// Config, and with an attempt timeout (which costs a timer, a context and
// a trace per attempt).
func benchTransports(b *testing.B) []struct {
	name string
	rt   http.RoundTripper
} {
	bare := &http.Transport{MaxIdleConnsPerHost: 64}
	wrapped := func(cfg unherdhttp.Config) http.RoundTripper {
		base := &http.Transport{MaxIdleConnsPerHost: 64}
		b.Cleanup(base.CloseIdleConnections)
		tr, err := unherdhttp.NewTransport(base, cfg)
		if err != nil {
			b.Fatal(err)
		}
		return tr
	}
	b.Cleanup(bare.CloseIdleConnections)
	return []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", bare},
		{"unherd", wrapped(unherdhttp.Config{})},
		{"unherd-attempt-timeout", wrapped(unherdhttp.Config{Retry: retry.Config{AttemptTimeout: time.Second}})},
	}
}

func benchServer(b *testing.B) *httptest.Server {
	body := []byte("ok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	b.Cleanup(srv.Close)
	return srv
}

func roundTrip(b *testing.B, rt http.RoundTripper, req *http.Request) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkTransportGet measures one GET over a kept-alive loopback
// connection, its first attempt succeeding.
func BenchmarkTransportGet(b *testing.B) {
	srv := benchServer(b)
	for _, tc := range benchTransports(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			for b.Loop() {
				roundTrip(b, tc.rt, req)
			}
		})
	}
}

// BenchmarkTransportGetParallel is BenchmarkTransportGet from
// GOMAXPROCS goroutines sharing one round tripper.
func BenchmarkTransportGetParallel(b *testing.B) {
	srv := benchServer(b)
	for _, tc := range benchTransports(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				for pb.Next() {
					roundTrip(b, tc.rt, req)
				}
			})
		})
	}
}

// staticTransport answers every request with the same response, without
// a network, so that BenchmarkTransportOverhead measures the wrapper
// alone.
type staticTransport struct{ resp http.Response }

func (s *staticTransport) RoundTrip(*http.Request) (*http.Response, error) { return &s.resp, nil }

// BenchmarkTransportOverhead measures what a Transport adds to a request
// whose first attempt succeeds, over a base transport that costs nearly
// nothing: the part of BenchmarkTransportGet's difference that is not
// noise.
func BenchmarkTransportOverhead(b *testing.B) {
	base := &staticTransport{resp: http.Response{StatusCode: http.StatusOK, Body: http.NoBody}}
	tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"bare", base}, {"unherd", tr}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if resp, err := tc.rt.RoundTrip(req); err != nil || resp.StatusCode != http.StatusOK {
					b.Fatal(resp, err)
				}
			}
		})
	}
}

// BenchmarkTransportHedgedOverhead is BenchmarkTransportOverhead for a
// hedged GET whose primary answers before the hedge delay: the cost of
// the hedged attempt (hedge.Do, the race between its requests, and the
// context that lets a winning hedge cancel the primary).
func BenchmarkTransportHedgedOverhead(b *testing.B) {
	base := freshTransport{}
	h, err := hedge.New(hedge.Config{Delay: time.Hour, Budget: budget.Unlimited})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{Hedge: h})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(resp, err)
		}
		resp.Body.Close()
	}
}

// freshTransport answers every request with a new 200 response, without
// a network: a hedged attempt wraps the response's body, so the
// response cannot be shared as staticTransport's is.
type freshTransport struct{}

func (freshTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}
