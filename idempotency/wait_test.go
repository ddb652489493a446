package idempotency_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// With the default Wait, a duplicate of a request still running waits
// for it and gets its answer: no 409 for a handler that ends within
// DefaultWait.
func TestDuplicateWaitsByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &charger{sleep: 3 * time.Second}
		h := newHandler(t, idempotency.Config{}, c)
		first := make(chan *httptest.ResponseRecorder, 1)
		go func() { first <- do(h, "POST", "/", `"k"`, "1") }()
		time.Sleep(time.Second)
		start := time.Now()
		w := do(h, "POST", "/", `"k"`, "1")
		if w.Code != 201 || w.Header().Get(idempotency.ReplayedHeader) != "true" {
			t.Errorf("duplicate: %d replayed %q %q, want the first run's 201, replayed", w.Code, w.Header().Get(idempotency.ReplayedHeader), w.Body)
		}
		// The first request's end wakes a duplicate of the same process
		// at once, not at its next look at the store.
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("the duplicate answered %v after it arrived, want 2s (when the first ended)", d)
		}
		if w := <-first; w.Code != 201 || c.runs.Load() != 1 {
			t.Errorf("first: %d, %d runs; want 201 and 1 run", w.Code, c.runs.Load())
		}
	})
}

// A duplicate still waiting when Wait ends is answered 409 with
// Retry-After, a status unherdhttp's Transport retries.
func TestDuplicatePastWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &charger{sleep: 20 * time.Second}
		h := newHandler(t, idempotency.Config{}, c)
		go do(h, "POST", "/", `"k"`, "1")
		synctest.Wait()
		start := time.Now()
		w := do(h, "POST", "/", `"k"`, "1")
		wantProblem(t, w, 409, idempotency.CodeKeyInFlight)
		if d := time.Since(start); d != idempotency.DefaultWait {
			t.Errorf("waited %v, want DefaultWait (%v)", d, idempotency.DefaultWait)
		}
		if got, want := w.Header().Get("Retry-After"), "1"; got != want {
			t.Errorf("Retry-After %q, want %q", got, want)
		}
		time.Sleep(20 * time.Second)
	})
}

// A duplicate whose first request releases the key (a 5xx) claims it and
// runs itself, as soon as the key is released.
func TestDuplicateRunsAfterRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		runs := 0
		h := newHandler(t, idempotency.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			runs++
			n := runs
			mu.Unlock()
			if n == 1 {
				time.Sleep(time.Second)
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		go do(h, "POST", "/", `"k"`, "1")
		synctest.Wait()
		start := time.Now()
		if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 201 || w.Header().Get(idempotency.ReplayedHeader) != "" {
			t.Errorf("duplicate after the first failed: %d replayed %q, want its own 201", w.Code, w.Header().Get(idempotency.ReplayedHeader))
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("the duplicate ran %v after it arrived, want 1s (when the first released the key)", d)
		}
	})
}

// A duplicate whose client goes away stops waiting and writes nothing.
func TestDuplicateClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &charger{sleep: 3 * time.Second}
		h := newHandler(t, idempotency.Config{}, c)
		go do(h, "POST", "/", `"k"`, "1")
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		r := httptest.NewRequestWithContext(ctx, "POST", "/", strings.NewReader("1"))
		r.Header.Set(idempotency.KeyHeader, `"k"`)
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, r)
		if d := time.Since(start); d != 500*time.Millisecond {
			t.Errorf("the duplicate waited %v, want 500ms (its client's deadline)", d)
		}
		if w.Body.Len() != 0 {
			t.Errorf("wrote %d %q to a client that had gone", w.Code, w.Body)
		}
		time.Sleep(3 * time.Second)
	})
}

// Two instances share a store; a client reaches each by its own address,
// and the service by two names. A retry that reaches the other instance,
// by another address or another name, is the same request and replays:
// the fingerprint is the request's, not the name it was sent to.
func TestRetryThroughAnotherInstanceReplays(t *testing.T) {
	store := newMemory(t, idempotency.MemoryConfig{})
	c := &charger{}
	var urls []string
	for range 2 {
		srv := httptest.NewServer(newHandler(t, idempotency.Config{Store: store}, c))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	_, portB, _ := net.SplitHostPort(strings.TrimPrefix(urls[1], "http://"))
	post := func(url, host string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/charges", strings.NewReader("100 EUR"))
		req.Header.Set(idempotency.KeyHeader, `"one-charge"`)
		req.Header.Set("Content-Type", "text/plain")
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(idempotency.ReplayedHeader), string(b)
	}
	status, _, body := post(urls[0], "")
	if status != 201 {
		t.Fatalf("first: %d %q", status, body)
	}
	for _, retry := range []struct{ name, url, host string }{
		{"the other instance by its address", urls[1], ""},
		{"the other instance by another name", "http://localhost:" + portB, ""},
		{"the service by another name", urls[1], "payments.other.example"},
	} {
		s, replayed, b := post(retry.url, retry.host)
		if s != 201 || replayed != "true" || b != body {
			t.Errorf("retry through %s: %d replayed %q %q, want the first's 201 %q, replayed", retry.name, s, replayed, b, body)
		}
	}
	if n := c.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}
