package unherdhttp_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// A 409 with Retry-After to a request that carries an idempotency key is
// the draft's answer for a key whose first request still runs: retried.
// Any other 409 is a conflict that no retry resolves.
func TestKeyInFlightRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		method     string
		key        string
		retryAfter string
		wantHits   int
		wantStatus int
	}{
		{"POST with key, 409 with Retry-After", http.MethodPost, `"k"`, "0", 2, 200},
		{"PUT with key, 409 with Retry-After", http.MethodPut, `"k"`, "0", 2, 200},
		{"POST with key, 409 without Retry-After", http.MethodPost, `"k"`, "", 1, 409},
		{"PUT without key, 409 with Retry-After", http.MethodPut, "", "0", 1, 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if hits.Add(1) == 1 {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(http.StatusConflict)
					return
				}
				io.WriteString(w, "ok")
			})
			tr := newTransport(t, unherdhttp.Config{Retry: fast})
			req, _ := http.NewRequest(tc.method, srv.URL, strings.NewReader("body"))
			if tc.key != "" {
				req.Header.Set(idempotency.KeyHeader, tc.key)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || int(hits.Load()) != tc.wantHits {
				t.Errorf("got %d after %d requests, want %d after %d", resp.StatusCode, hits.Load(), tc.wantStatus, tc.wantHits)
			}
		})
	}
}

// The client with an attempt timeout shorter than the handler, against
// the idempotency middleware on loopback: the first attempt times out
// while its handler goes on, the retries reach the key in flight, wait
// for it or are asked to come back (409 with Retry-After), and the call
// ends with the one execution's answer.
func TestRetryGetsTheOneExecutionsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration // the middleware's Config.Wait
	}{
		{"duplicates wait for the first", 0},
		{"duplicates asked to come back", 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			m, err := idempotency.New(idempotency.Config{Wait: tc.wait})
			if err != nil {
				t.Fatal(err)
			}
			srv := newServer(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := runs.Add(1)
				time.Sleep(300 * time.Millisecond) // the work goes on after the caller's attempt has gone
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, "charged by run "+string(rune('0'+n)))
			})).ServeHTTP)
			tr := newTransport(t, unherdhttp.Config{Retry: retry.Config{MaxAttempts: 5, AttemptTimeout: 100 * time.Millisecond}, AutoIdempotencyKey: true})
			resp, err := (&http.Client{Transport: tr}).Post(srv.URL, "text/plain", strings.NewReader("100 EUR"))
			if err != nil {
				t.Fatalf("%v after %d runs", err, runs.Load())
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 || string(body) != "charged by run 1" || runs.Load() != 1 {
				t.Errorf("got %d %q after %d runs, want 201 %q from the one run", resp.StatusCode, body, runs.Load(), "charged by run 1")
			}
		})
	}
}

// Two callers send one key at once: the second waits, or is asked to
// come back, and gets the first's answer.
func TestConcurrentKeyGetsOneAnswer(t *testing.T) {
	var runs atomic.Int32
	m, err := idempotency.New(idempotency.Config{Wait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	answered := make(chan struct{}) // closed when the second caller's first request has its answer
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		started <- struct{}{}
		// The first request's work lasts until the second caller has
		// reached its key in flight and been answered (after its wait,
		// 409 with Retry-After).
		if !await.Within(answered) {
			t.Errorf("the first request's handler waited %v for the second caller's request to be answered", await.Timeout)
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "charged")
	}))
	var arrivals atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := arrivals.Add(1)
		h.ServeHTTP(w, r)
		if n == 2 {
			close(answered)
		}
	})
	tr := newTransport(t, unherdhttp.Config{})
	post := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("100 EUR"))
		req.Header.Set(idempotency.KeyHeader, `"one"`)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	wg.Go(func() { codes[0], _ = post() })
	await.Recv(t, started, "the first request's handler to start")
	wg.Go(func() { codes[1], _ = post() })
	wg.Wait()
	if codes[0] != 201 || codes[1] != 201 || runs.Load() != 1 {
		t.Errorf("answers %v after %d runs, want 201 twice from one run", codes, runs.Load())
	}
}
