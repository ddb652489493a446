package unherdhttp_test

// Replay safety: which requests are sent again after a failure that may
// have followed the server acting on them.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// resetFirst hijacks the first n requests and resets their connections
// without answering; later requests get 200. It records the
// Idempotency-Key and the attempt header of every request.
type resetFirst struct {
	n        int
	mu       sync.Mutex
	hits     int
	keys     []string
	attempts []string
}

func (f *resetFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.hits++
	hit := f.hits
	f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
	f.attempts = append(f.attempts, r.Header.Get(unherdhttp.AttemptHeader))
	f.mu.Unlock()
	if hit > f.n {
		io.WriteString(w, "ok")
		return
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.(*net.TCPConn).SetLinger(0) // close with RST
	conn.Close()
}

func (f *resetFirst) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

// A connection reset after the request was written may follow a server
// that acted on it: only requests that may be repeated (the idempotent
// methods of RFC 9110, section 9.2.2, and requests with an idempotency
// key) are retried, by this layer (the retry carries the attempt header),
// not by net/http's own replay, which covers only reused connections.
func TestConnectionReset(t *testing.T) {
	tests := []struct {
		name        string
		method, key string
		auto        bool
		wantHits    int
		wantOK      bool
	}{
		{"GET retried", http.MethodGet, "", false, 2, true},
		{"HEAD retried", http.MethodHead, "", false, 2, true},
		{"OPTIONS retried", http.MethodOptions, "", false, 2, true},
		{"TRACE retried", http.MethodTrace, "", false, 2, true},
		{"PUT retried", http.MethodPut, "", false, 2, true},
		{"DELETE retried", http.MethodDelete, "", false, 2, true},
		{"POST without key not retried", http.MethodPost, "", false, 1, false},
		{"PATCH without key not retried", http.MethodPatch, "", false, 1, false},
		{"POST with key retried", http.MethodPost, "k-1", false, 2, true},
		{"POST with automatic key retried", http.MethodPost, "", true, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &resetFirst{n: 1}
			srv := newServer(t, f.ServeHTTP)
			tr := newTransport(t, unherdhttp.Config{Retry: fast, AutoIdempotencyKey: tc.auto})
			var body io.Reader = strings.NewReader("payload")
			if tc.method == http.MethodTrace {
				body = nil // a TRACE carries no content (RFC 9110, section 9.3.8)
			}
			req, _ := http.NewRequest(tc.method, srv.URL, body)
			if tc.key != "" {
				req.Header.Set("Idempotency-Key", tc.key)
			}
			status, _, err := do(tr, req)
			if got := f.count(); got != tc.wantHits {
				t.Errorf("server saw %d requests, want %d", got, tc.wantHits)
			}
			if !tc.wantOK {
				var nr *unherdhttp.NotReplayedError
				if !errors.As(err, &nr) || !errors.Is(err, retry.ErrFinal) {
					t.Fatalf("got %d, %v; want a NotReplayedError", status, err)
				}
				return
			}
			if err != nil || status != 200 {
				t.Fatalf("got %d, %v; want 200", status, err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.attempts[1] != "2" {
				t.Errorf("attempt headers %q, want the second request to be this layer's retry (2)", f.attempts)
			}
			if f.keys[0] != f.keys[1] {
				t.Errorf("idempotency keys %q differ between attempts", f.keys)
			}
			if tc.auto && len(f.keys[0]) != 38 {
				t.Errorf("automatic key %q is not a UUID", f.keys[0])
			}
		})
	}
}

// countingTransport counts the attempts that reach the base transport.
type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

// A POST whose connection was refused never reached a server: it is
// retried, and the error keeps the cause reachable.
func TestPostRetriedAfterDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused

	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	ct := &countingTransport{base: base}
	tr, err := unherdhttp.NewTransport(ct, unherdhttp.Config{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr, strings.NewReader("payload"))
	_, _, err = do(tr, req)
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, retry.ErrAttemptsExhausted) {
		t.Fatalf("got %v, want connection refused after all attempts", err)
	}
	if got := ct.n.Load(); got != 3 {
		t.Errorf("%d attempts, want 3", got)
	}
}

// A server that closes a kept-alive connection after reading a request,
// without answering, gives the client an EOF on a reused connection.
// net/http replays only GET, HEAD, OPTIONS and TRACE itself; a PUT is
// retried here.
func TestEOFOnReusedConnection(t *testing.T) {
	var hits atomic.Int32
	var third atomic.Value
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := hits.Add(1)
		if n == 3 {
			third.Store(r.Header.Get(unherdhttp.AttemptHeader))
		}
		if n == 2 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t, unherdhttp.Config{Retry: fast})
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	for i := range 2 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL, strings.NewReader("x"))
		if status, _, err := do(tr, req); err != nil || status != 200 {
			t.Fatalf("request %d: got %d, %v; want 200", i+1, status, err)
		}
	}
	if hits.Load() != 3 || len(reused) != 3 || !reused[1] || third.Load() != "2" {
		t.Errorf("%d requests at the server, connection reuse %v, third request's attempt header %q; want 3, the second on a reused connection, the third this layer's retry (2)",
			hits.Load(), reused, third.Load())
	}
}
