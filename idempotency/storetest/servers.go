package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// ExactlyOnceResult is what ExactlyOnce saw.
type ExactlyOnceResult struct {
	Requests int // sent
	Runs     int // times the handler ran
	Fresh    int // responses from the run itself
	Replayed int // responses replayed from the record
	Other    int // anything else (a 409 after the wait, an error)
}

func (r ExactlyOnceResult) String() string {
	return fmt.Sprintf("%d requests: handler ran %d times; %d fresh, %d replayed, %d other responses", r.Requests, r.Runs, r.Fresh, r.Replayed, r.Other)
}

// ExactlyOnce starts one loopback HTTP server per store, each behind a
// Middleware of its own (as separate processes would be), sends n
// concurrent POST requests with one key and one body spread over the
// servers, and fails t unless the handler ran exactly once and every
// response is that run's, fresh once and replayed the other n-1 times.
// The handler takes hold long enough for the requests to overlap, and the
// middleware waits up to a minute for it (Config.Wait), so no request
// should see a 409.
func ExactlyOnce(t *testing.T, n int, hold time.Duration, stores ...idempotency.Store) ExactlyOnceResult {
	t.Helper()
	var runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		body, _ := io.ReadAll(r.Body)
		time.Sleep(hold) // the work whose duplicates the requests race
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%q}`, body)
	})
	var urls []string
	var storeErrors atomic.Int32
	onError := func(_ *http.Request, err error) {
		if storeErrors.Add(1) <= 3 {
			t.Logf("store error: %v", err)
		}
	}
	for _, s := range stores {
		// The store is given ample time: what is checked is that the
		// handler runs once, not how fast a loaded store answers.
		m, err := idempotency.New(idempotency.Config{Store: s, Wait: time.Minute, StoreTimeout: 20 * time.Second, OnError: onError})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m.Handler(handler))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	key := `"exactly-once-` + random() + `"`

	var mu sync.Mutex
	res := ExactlyOnceResult{Requests: n}
	var first string
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest(http.MethodPost, urls[i%len(urls)]+"/charges", strings.NewReader("100 EUR"))
			// Each server reached by its own address, as a client that
			// balances its own load reaches them: a request's Host is
			// not part of its fingerprint.
			req.Header.Set(idempotency.KeyHeader, key)
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Other++
				t.Errorf("request %d: %v", i, err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode != http.StatusCreated:
				res.Other++
				if res.Other <= 3 {
					t.Errorf("request %d: %d %s", i, resp.StatusCode, body)
				}
				return
			case resp.Header.Get(idempotency.ReplayedHeader) == "true":
				res.Replayed++
			default:
				res.Fresh++
			}
			if first == "" {
				first = string(body)
			} else if string(body) != first {
				t.Errorf("request %d: body %q, want the run's %q", i, body, first)
			}
		})
	}
	close(start)
	wg.Wait()
	res.Runs = int(runs.Load())
	if res.Runs != 1 || res.Fresh != 1 || res.Replayed != n-1 {
		t.Errorf("%v; want 1 run, 1 fresh and %d replayed", res, n-1)
	}
	return res
}

// serve sends one POST with key through h and returns the status, the
// replay header and the problem code, if any.
func serve(h http.Handler, key string) (status int, replayed bool, code string) {
	r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader("100 EUR"))
	r.Header.Set(idempotency.KeyHeader, key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var p struct{ Code string }
	if w.Header().Get("Content-Type") == "application/problem+json" {
		_ = json.Unmarshal(w.Body.Bytes(), &p)
	}
	return w.Code, w.Header().Get(idempotency.ReplayedHeader) == "true", p.Code
}

// RerunAfterLease checks the lease of a holder that died: a request
// claims a key through the middleware and its process dies (nothing it
// does after the claim reaches the store); until the lease expires the
// key answers 409 to a request that does not wait, and then n concurrent
// retries on another server run the handler exactly once, all of them
// answered 201 (the others wait for the one that runs), and every later
// request replays it. The
// store's clock decides the expiry, so this waits for lease in real time.
func RerunAfterLease(t *testing.T, store idempotency.Store, lease time.Duration, n int) {
	t.Helper()
	key := `"rerun-` + random() + `"`
	dead := make(chan struct{})
	deadDone := make(chan struct{})
	started := make(chan struct{})
	a, err := idempotency.New(idempotency.Config{Store: deadAfterClaim{store}, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(deadDone)
		serve(a.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			close(started)
			<-dead
		})), key)
	}()
	defer func() { close(dead); <-deadDone }()
	<-started

	var runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		time.Sleep(lease / 4) // long enough for the retries to overlap
		w.WriteHeader(http.StatusCreated)
	})
	// A request that does not wait (Wait < 0) sees the key in flight
	// while the dead holder's lease runs.
	impatient, err := idempotency.New(idempotency.Config{Store: store, Lease: lease, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, code := serve(impatient.Handler(handler), key); status != http.StatusConflict || code != idempotency.CodeKeyInFlight {
		t.Fatalf("while the dead holder's lease runs: %d %s, want 409 %s", status, code, idempotency.CodeKeyInFlight)
	}
	time.Sleep(lease + lease/2)
	// The retries wait for the one of them that runs (Config.Wait's
	// default), and get its answer.
	b, err := idempotency.New(idempotency.Config{Store: store, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	h := b.Handler(handler)
	var wg sync.WaitGroup
	var conflicts, created atomic.Int32
	for range n {
		wg.Go(func() {
			switch status, _, _ := serve(h, key); status {
			case http.StatusConflict:
				conflicts.Add(1)
			case http.StatusCreated:
				created.Add(1)
			default:
				t.Errorf("a retry after the lease: status %d", status)
			}
		})
	}
	wg.Wait()
	if conflicts.Load() > 0 {
		t.Errorf("%d of %d retries answered 409: a duplicate waits for the re-run's answer", conflicts.Load(), n)
	}
	if status, replayed, _ := serve(h, key); status != http.StatusCreated || !replayed {
		t.Errorf("after the re-run: %d, replayed %v; want a replayed 201", status, replayed)
	}
	if got := runs.Load(); got != 1 {
		t.Errorf("the handler ran %d times after the dead holder's lease expired, want exactly 1", got)
	}
	t.Logf("dead holder: %d retries after its lease: handler ran %d time(s); %d answered 201, %d answered 409 while the re-run ran", n, runs.Load(), created.Load(), conflicts.Load())
}

// deadAfterClaim is the store as a process sees it that claimed a key
// and then lost the store for good.
type deadAfterClaim struct{ idempotency.Store }

var errDead = &deadError{}

type deadError struct{}

func (*deadError) Error() string { return "storetest: the process holding the lease is dead" }

func (deadAfterClaim) Renew(context.Context, string, uint64, time.Duration) error { return errDead }
func (deadAfterClaim) Complete(context.Context, string, uint64, *idempotency.Response, time.Duration) error {
	return errDead
}
func (deadAfterClaim) Release(context.Context, string, uint64) error { return errDead }

// FailsClosed checks that with an unreachable store (one whose every call
// fails) the middleware answers 503 store-unavailable with Retry-After
// and never runs the handler, and that with FailOpen it runs it.
func FailsClosed(t *testing.T, unreachable idempotency.Store) {
	t.Helper()
	var runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	})
	closed, err := idempotency.New(idempotency.Config{Store: unreachable, StoreTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := closed.Handler(handler)
	for range 5 {
		if status, _, code := serve(h, `"unreachable"`); status != http.StatusServiceUnavailable || code != idempotency.CodeStoreUnavailable {
			t.Errorf("store unreachable: %d %s, want 503 %s", status, code, idempotency.CodeStoreUnavailable)
		}
	}
	if runs.Load() != 0 {
		t.Errorf("store unreachable, failing closed: the handler ran %d times, want 0", runs.Load())
	}
	open, err := idempotency.New(idempotency.Config{Store: unreachable, StoreTimeout: 500 * time.Millisecond, FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, _ := serve(open.Handler(handler), `"unreachable"`); status != http.StatusCreated || runs.Load() != 1 {
		t.Errorf("store unreachable, failing open: %d after %d runs, want the handler's 201", status, runs.Load())
	}
}
