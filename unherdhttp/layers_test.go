package unherdhttp_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// naiveGet is the per-layer retry loop many services hand-write: three
// attempts, retrying any 503, no idea whether an outer layer retries too.
func naiveGet(ctx context.Context, rt http.RoundTripper, url string) int {
	status := http.StatusBadGateway
	for range 3 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
		if status != http.StatusServiceUnavailable {
			break
		}
	}
	return status
}

// unherdGet is the same call through a Transport.
func unherdGet(ctx context.Context, rt http.RoundTripper, url string) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return http.StatusBadGateway
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// chain builds the services A -> B -> C over loopback, C always answering
// 503, and returns A's URL and C's request count. Each of A and B serves
// through wrap and calls the next layer with call, over its own
// RoundTripper from newRT.
func chain(t *testing.T, wrap func(http.Handler) http.Handler, newRT func() http.RoundTripper,
	call func(context.Context, http.RoundTripper, string) int) (string, *atomic.Int32) {
	var cHits atomic.Int32
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		cHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	next := c.URL
	for range 2 { // B, then A
		rt, url := newRT(), next
		srv := newServer(t, wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(call(r.Context(), rt, url))
		})).ServeHTTP)
		next = srv.URL
	}
	return next, &cHits
}

// TestRetryAtOneLayer counts the requests the bottom service C receives
// for one user request when every layer retries three times: 27 with a
// hand-written loop at each layer, 3 with the Transport and Middleware at
// every layer, because only the edge retries.
func TestRetryAtOneLayer(t *testing.T) {
	identity := func(h http.Handler) http.Handler { return h }
	plain := func() http.RoundTripper {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		return tr
	}
	unherd := func(cfg unherdhttp.Config) func() http.RoundTripper {
		return func() http.RoundTripper { return newTransport(t, cfg) }
	}
	tests := []struct {
		name  string
		wrap  func(http.Handler) http.Handler
		newRT func() http.RoundTripper
		call  func(context.Context, http.RoundTripper, string) int
		want  int32
	}{
		{"naive loop of 3 at every layer", identity, plain, naiveGet, 27},
		// Real waits: 503 is a throttling answer, retried from the 1 s
		// throttled base with full jitter.
		{"unherd defaults at every layer", unherdhttp.Middleware, unherd(unherdhttp.Config{}), unherdGet, 3},
		{"unherd, inner layers allowed 2 attempts", unherdhttp.Middleware, unherd(unherdhttp.Config{Retry: retry.Config{NestedAttempts: 2, Backoff: fast.Backoff}}), unherdGet, 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, cHits := chain(t, tc.wrap, tc.newRT, tc.call)
			if status := tc.call(context.Background(), tc.newRT(), a); status != http.StatusServiceUnavailable {
				t.Errorf("user got %d, want C's 503 passed up", status)
			}
			t.Logf("%s: C received %d requests for one user request", tc.name, cHits.Load())
			if got := cHits.Load(); got != tc.want {
				t.Errorf("C received %d requests, want %d", got, tc.want)
			}
		})
	}
}
