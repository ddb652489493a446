package bench

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

var okBody = []byte("ok")

// server is a loopback HTTP server that answers every GET with 200 "ok"
// and counts the requests it receives.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(b *testing.B) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		w.Write(okBody)
	}))
	b.Cleanup(s.Close)
	return s
}

// get returns a GET request for the server's root, with a cancellable
// context as a request made while serving one has.
func (s *server) get(b *testing.B) *http.Request {
	req, err := http.NewRequestWithContext(reqCtx(b), http.MethodGet, s.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	return req
}

// check fails the benchmark unless the server saw exactly one request per
// call: a retrying round tripper must not repeat a request that succeeded.
func (s *server) check(b *testing.B) {
	b.Helper()
	if n := s.hits.Load(); n != int64(b.N) {
		b.Fatalf("server saw %d requests for %d calls, want one each", n, b.N)
	}
}

// newBase returns the http.Transport every case sends through: one of its
// own per case, with enough idle connections for the parallel runs.
func newBase(b *testing.B) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	b.Cleanup(t.CloseIdleConnections)
	return t
}

// roundTrippers returns the round trippers compared: the bare transport
// and each library's HTTP integration over a transport like it, each with
// three attempts and jittered exponential backoff from 50 ms to 20 s where
// the library has those settings, and no retry budget (no peer has one
// here).
func roundTrippers(b *testing.B) []struct {
	lib string
	rt  http.RoundTripper
} {
	// The defaults but for the budget.
	un, err := unherdhttp.NewTransport(newBase(b), unherdhttp.Config{Retry: retry.Config{Budget: budget.Unlimited}})
	if err != nil {
		b.Fatal(err)
	}

	fs := failsafehttp.NewRoundTripper(newBase(b), failsafehttp.NewRetryPolicyBuilder().
		WithMaxAttempts(attempts).
		WithBackoff(base, maxDelay).
		WithJitterFactor(1).
		Build())

	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: newBase(b)}
	rc.RetryMax = attempts - 1
	rc.RetryWaitMin = base
	rc.RetryWaitMax = maxDelay
	rc.Logger = nil // its default logs every request to stderr

	return []struct {
		lib string
		rt  http.RoundTripper
	}{
		{"bare", newBase(b)},
		{"unherd", un},
		{"failsafe-go", fs},
		{"retryablehttp", &retryablehttp.RoundTripper{Client: rc}},
	}
}

// eachRoundTripper runs bench as a sub-benchmark for each of
// roundTrippers, with allocations reported, a loopback server of its
// own and a GET request for that server.
func eachRoundTripper(b *testing.B, bench func(b *testing.B, rt http.RoundTripper, srv *server, req *http.Request)) {
	for _, tc := range roundTrippers(b) {
		b.Run(tc.lib, func(b *testing.B) {
			b.ReportAllocs()
			srv := newServer(b)
			bench(b, tc.rt, srv, srv.get(b))
		})
	}
}

// get sends req through rt and fails the benchmark unless it got 200 "ok".
// It reports failures with Error, not Fatal, so that it may run on the
// goroutines of RunParallel.
func get(b *testing.B, rt http.RoundTripper, req *http.Request) bool {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Error(err)
		return false
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, okBody) {
		b.Errorf("got %d %q (%v), want 200 %q", resp.StatusCode, body, err, okBody)
		return false
	}
	return true
}

// BenchmarkHTTPGet is one GET to a loopback server over a kept-alive
// connection, its first attempt succeeding: what each library's HTTP
// integration adds to a healthy request.
func BenchmarkHTTPGet(b *testing.B) {
	eachRoundTripper(b, func(b *testing.B, rt http.RoundTripper, srv *server, req *http.Request) {
		for b.Loop() {
			if !get(b, rt, req) {
				b.FailNow()
			}
		}
		srv.check(b)
	})
}

// BenchmarkHTTPGetParallel is BenchmarkHTTPGet from GOMAXPROCS goroutines
// sharing one round tripper.
func BenchmarkHTTPGetParallel(b *testing.B) {
	eachRoundTripper(b, func(b *testing.B, rt http.RoundTripper, srv *server, req *http.Request) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !get(b, rt, req) {
					return
				}
			}
		})
		if !b.Failed() {
			srv.check(b)
		}
	})
}
