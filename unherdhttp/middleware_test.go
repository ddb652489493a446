package unherdhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
	"github.com/unherd/unherd/unherdhttp"
)

// ExampleMiddleware_layers builds three services, A -> B -> C, each of A and B
// serving through Middleware and calling the next with a Transport, and
// C always answering 503. The edge retries: C receives the edge's 3
// attempts, not 3 x 3 x 3. When the edge sends a POST without an
// Idempotency-Key, which it does not repeat, A is not marked, and its own
// call to B (a GET) keeps its retries; B, called with a GET, is marked.
func ExampleMiddleware_layers() {
	var hits atomic.Int32
	c := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer c.Close()

	// Immediate retries keep the example fast; leave Backoff zero in
	// production for full jitter.
	cfg := unherdhttp.Config{Retry: retry.Config{Backoff: backoff.Schedule{Immediate: true}}}
	var transports []*unherdhttp.Transport
	defer func() {
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
	}()
	newClient := func() *http.Client {
		tr, err := unherdhttp.NewTransport(nil, cfg)
		if err != nil {
			panic(err)
		}
		transports = append(transports, tr)
		return &http.Client{Transport: tr}
	}
	// layer serves through Middleware and GETs next with the request's
	// context, answering 503 when the call fails, so that its caller's
	// retries see a status they repeat.
	layer := func(next string) *httptest.Server {
		client := newClient()
		return httptest.NewServer(unherdhttp.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, next, nil)
			resp, err := client.Do(req)
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
		})))
	}
	b := layer(c.URL)
	defer b.Close()
	a := layer(b.URL)
	defer a.Close()

	edge := newClient()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		hits.Store(0)
		req, _ := http.NewRequest(method, a.URL, nil)
		resp, err := edge.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("%s at the edge: %d, C received %d requests\n", method, resp.StatusCode, hits.Load())
	}
	// Output:
	// GET at the edge: 503, C received 3 requests
	// POST at the edge: 503, C received 3 requests
}

// TestMiddlewareMarks checks which inbound requests Middleware marks as
// coming from a caller that retries.
func TestMiddlewareMarks(t *testing.T) {
	tests := []struct {
		name   string
		method string
		header map[string]string
		want   bool
	}{
		{"GET", http.MethodGet, nil, true},
		{"HEAD", http.MethodHead, nil, true},
		{"PUT", http.MethodPut, nil, true},
		{"DELETE", http.MethodDelete, nil, true},
		{"OPTIONS", http.MethodOptions, nil, true},
		{"POST without a key", http.MethodPost, nil, false},
		{"PATCH without a key", http.MethodPatch, nil, false},
		{"POST with Idempotency-Key", http.MethodPost, map[string]string{idempotency.KeyHeader: "k"}, true},
		{"POST with X-Idempotency-Key", http.MethodPost, map[string]string{"X-Idempotency-Key": "k"}, true},
		{"POST repeated by a Transport", http.MethodPost, map[string]string{unherdhttp.AttemptHeader: "2"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got bool
			h := unherdhttp.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = engine.HasOuterRetry(r.Context())
			}))
			req := httptest.NewRequest(tc.method, "/", nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got != tc.want {
				t.Errorf("marked = %v, want %v", got, tc.want)
			}
		})
	}
}
