package unherdhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
	"github.com/unherd/unherd/unherdhttp"
)

func Example() {
	// A server that is unavailable for its first request.
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		if requests == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "hello, attempt %s", r.Header.Get(unherdhttp.AttemptHeader))
	}))
	defer srv.Close()

	tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{
		// Immediate retries keep the example fast; leave Backoff zero in
		// production for full jitter.
		Retry: retry.Config{Backoff: backoff.Schedule{Immediate: true}},
	})
	if err != nil {
		panic(err)
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "after", requests, "requests")
	// Output: 200 hello, attempt 2 after 2 requests
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sun, 01 Mar 2026 12:00:30 GMT", "soon"} {
		d, ok := unherdhttp.ParseRetryAfter(v, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 30s true
	// 0s false
}

// Middleware marks the request context: calls made with it make a single
// attempt, because the caller already retries.
func ExampleMiddleware() {
	h := unherdhttp.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("outer layer retries:", engine.HasOuterRetry(r.Context()))
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	// Output: outer layer retries: true
}

// With AutoIdempotencyKey a POST carries one key on every attempt, so
// the server can apply it once and the client may retry it.
func ExampleConfig_autoIdempotencyKey() {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get(idempotency.KeyHeader))
		if len(keys) == 1 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{
		AutoIdempotencyKey: true,
		Retry:              retry.Config{Backoff: backoff.Schedule{Immediate: true}},
	})
	if err != nil {
		panic(err)
	}
	defer tr.CloseIdleConnections()

	resp, err := (&http.Client{Transport: tr}).Post(srv.URL, "text/plain", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, len(keys), "requests, same key:", keys[0] == keys[1], "key length:", len(keys[0]))
	// Output: 200 2 requests, same key: true key length: 38
}

// ExampleShed refuses a request over a concurrency limit before its
// handler runs, with 503 and Retry-After, which a Transport honours.
func ExampleShed() {
	l, err := limit.New(limit.Config{Algorithm: limit.Fixed(1)})
	if err != nil {
		panic(err)
	}
	shed, err := unherdhttp.Shed(unherdhttp.ShedConfig{Limiter: l})
	if err != nil {
		panic(err)
	}
	h := shed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, deadline := r.Context().Deadline()
		fmt.Fprintln(w, "served; deadline from the caller:", deadline)
	}))

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(unherdhttp.TimeoutHeader, "850") // as a Transport sends it
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())

	busy, _ := l.Acquire(time.Now()) // a request in flight fills the limit
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	busy.Served(time.Now())
	fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"))
	// Output:
	// 200 served; deadline from the caller: true
	// 503 Retry-After: 1
}
