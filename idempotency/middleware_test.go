package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// charger is a handler that counts the times it ran and answers 201
// with a body naming the run.
type charger struct {
	runs    atomic.Int32
	status  int
	block   chan struct{} // if set, each run waits for it to close
	started chan struct{} // if set, receives once per run
	sleep   time.Duration
	body    string
	panics  bool
}

func (c *charger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.runs.Add(1)
	if c.started != nil {
		c.started <- struct{}{}
	}
	if c.block != nil {
		<-c.block
	}
	if c.sleep > 0 {
		select {
		case <-time.After(c.sleep):
		case <-r.Context().Done():
		}
	}
	if c.panics {
		panic(http.ErrAbortHandler)
	}
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Run", string(rune('0'+n)))
	w.WriteHeader(cmpOr(c.status, http.StatusCreated))
	_, _ = io.WriteString(w, cmpOr(c.body, `{"charged":"`+string(b)+`"}`))
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a == zero {
		return b
	}
	return a
}

func newHandler(t testing.TB, cfg idempotency.Config, h http.Handler) http.Handler {
	t.Helper()
	m, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m.Handler(h)
}

// do serves one request and returns the recorded response.
func do(h http.Handler, method, path, key, body string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set(idempotency.KeyHeader, key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// problemCode decodes a problem+json body's status and code.
func problemCode(t *testing.T, w *httptest.ResponseRecorder) (int, string) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d, Content-Type %q, want application/problem+json (body %q)", w.Code, ct, w.Body)
	}
	var p struct {
		Type, Title, Code string
		Status            int
	}
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != w.Code || p.Type == "" || p.Title == "" {
		t.Errorf("problem %+v does not match status %d or lacks type/title", p, w.Code)
	}
	return w.Code, p.Code
}

func wantProblem(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	gotS, gotC := problemCode(t, w)
	if gotS != status || gotC != code {
		t.Errorf("got %d %s, want %d %s", gotS, gotC, status, code)
	}
}

func TestKeyErrors(t *testing.T) {
	long := `"` + strings.Repeat("k", 256) + `"`
	cases := []struct {
		name   string
		cfg    idempotency.Config
		key    string
		status int
		code   string
	}{
		{"required key missing", idempotency.Config{Required: true}, "", 400, idempotency.CodeKeyMissing},
		{"malformed", idempotency.Config{}, `"abc`, 400, idempotency.CodeKeyMalformed},
		{"longer than 255", idempotency.Config{}, long, 400, idempotency.CodeKeyMalformed},
		{"bare when strict", idempotency.Config{StrictSyntax: true}, `abc`, 400, idempotency.CodeKeyMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &charger{}
			w := do(newHandler(t, tc.cfg, c), "POST", "/charges", tc.key, "x")
			wantProblem(t, w, tc.status, tc.code)
			if c.runs.Load() != 0 {
				t.Error("the handler ran")
			}
		})
	}
	t.Run("two header lines", func(t *testing.T) {
		c := &charger{}
		w := do(newHandler(t, idempotency.Config{}, c), "POST", "/", `"a"`, "", idempotency.KeyHeader, `"b"`)
		wantProblem(t, w, 400, idempotency.CodeKeyMalformed)
	})
	t.Run("body too large", func(t *testing.T) {
		c := &charger{}
		w := do(newHandler(t, idempotency.Config{MaxRequestBody: 4}, c), "POST", "/", `"a"`, "12345")
		wantProblem(t, w, 413, idempotency.CodeBodyTooLarge)
	})
}

func TestPassThrough(t *testing.T) {
	c := &charger{}
	h := newHandler(t, idempotency.Config{Required: true}, c)
	for range 2 {
		if w := do(h, "GET", "/", `"k"`, ""); w.Code != 201 || w.Header().Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("GET: %d %v", w.Code, w.Header())
		}
	}
	h = newHandler(t, idempotency.Config{}, c)
	if w := do(h, "POST", "/", "", "a"); w.Code != 201 {
		t.Fatalf("POST without a key where none is required: %d", w.Code)
	}
	if got := c.runs.Load(); got != 3 {
		t.Errorf("handler ran %d times, want 3 (nothing keyed)", got)
	}
}

func TestReplay(t *testing.T) {
	c := &charger{}
	h := newHandler(t, idempotency.Config{}, c)
	first := do(h, "POST", "/charges", `"k1"`, "100")
	second := do(h, "POST", "/charges", `"k1"`, "100")
	third := do(h, "POST", "/charges", `k1`, "100") // the same key, bare
	if c.runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", c.runs.Load())
	}
	for i, w := range []*httptest.ResponseRecorder{second, third} {
		if w.Code != first.Code || w.Body.String() != first.Body.String() || w.Header().Get("X-Run") != "1" {
			t.Errorf("replay %d: %d %q %v, want the first response %d %q", i, w.Code, w.Body, w.Header(), first.Code, first.Body)
		}
		if w.Header().Get(idempotency.ReplayedHeader) != "true" {
			t.Errorf("replay %d lacks %s: true", i, idempotency.ReplayedHeader)
		}
	}
	if first.Header().Get(idempotency.ReplayedHeader) != "" {
		t.Error("the first response says it is a replay")
	}
}

func TestFingerprintMismatch(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		hdr                      []string
	}{
		{"other body", "POST", "/charges", "200", nil},
		{"other path", "POST", "/refunds", "100", nil},
		{"other query", "POST", "/charges?x=1", "100", nil},
		{"other method", "PATCH", "/charges", "100", nil},
		{"other content type", "POST", "/charges", "100", []string{"Content-Type", "text/plain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &charger{}
			h := newHandler(t, idempotency.Config{}, c)
			do(h, "POST", "/charges", `"k"`, "100")
			wantProblem(t, do(h, tc.method, tc.path, `"k"`, tc.body, tc.hdr...), 422, idempotency.CodeKeyMismatch)
			if c.runs.Load() != 1 {
				t.Errorf("handler ran %d times", c.runs.Load())
			}
		})
	}
}

func TestPrincipalScopesKeys(t *testing.T) {
	c := &charger{}
	h := newHandler(t, idempotency.Config{Principal: func(r *http.Request) string { return r.Header.Get("X-User") }}, c)
	do(h, "POST", "/", `"k"`, "1", "X-User", "alice")
	do(h, "POST", "/", `"k"`, "2", "X-User", "bob")
	do(h, "POST", "/", `"k"`, "1", "X-User", "alice")
	// A principal and key that concatenate alike are still apart.
	do(h, "POST", "/", `"ek"`, "3", "X-User", "alic")
	if got := c.runs.Load(); got != 3 {
		t.Errorf("handler ran %d times, want 3 (alice once, bob once, alic once)", got)
	}
}

func TestInFlightConflict(t *testing.T) {
	c := &charger{block: make(chan struct{}), started: make(chan struct{}, 1)}
	h := newHandler(t, idempotency.Config{}, c)
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do(h, "POST", "/", `"k"`, "1") }()
	<-c.started
	w := do(h, "POST", "/", `"k"`, "1")
	wantProblem(t, w, 409, idempotency.CodeKeyInFlight)
	if w.Header().Get("Retry-After") == "" {
		t.Error("409 without Retry-After")
	}
	wantProblem(t, do(h, "POST", "/", `"k"`, "2"), 422, idempotency.CodeKeyMismatch)
	close(c.block)
	if w := <-done; w.Code != 201 {
		t.Errorf("first request: %d", w.Code)
	}
}

// With Wait, a duplicate waits for the first request and replays it.
func TestWaitThenReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &charger{sleep: 300 * time.Millisecond}
		h := newHandler(t, idempotency.Config{Wait: time.Second}, c)
		var wg sync.WaitGroup
		res := make([]*httptest.ResponseRecorder, 5)
		for i := range res {
			wg.Go(func() { res[i] = do(h, "POST", "/", `"k"`, "1") })
		}
		wg.Wait()
		replays := 0
		for _, w := range res {
			if w.Code != 201 {
				t.Errorf("status %d, want 201", w.Code)
			}
			if w.Header().Get(idempotency.ReplayedHeader) == "true" {
				replays++
			}
		}
		if c.runs.Load() != 1 || replays != 4 {
			t.Errorf("%d runs and %d replays, want 1 and 4", c.runs.Load(), replays)
		}
		// A wait shorter than the handler ends in 409.
		c2 := &charger{sleep: 2 * time.Second}
		h2 := newHandler(t, idempotency.Config{Wait: 500 * time.Millisecond}, c2)
		go do(h2, "POST", "/", `"k"`, "1")
		synctest.Wait()
		start := time.Now()
		wantProblem(t, do(h2, "POST", "/", `"k"`, "1"), 409, idempotency.CodeKeyInFlight)
		if d := time.Since(start); d < 500*time.Millisecond || d > 600*time.Millisecond {
			t.Errorf("waited %v, want 500 ms", d)
		}
		time.Sleep(3 * time.Second)
	})
}

func TestFailureReleasesKey(t *testing.T) {
	t.Run("5xx", func(t *testing.T) {
		c := &charger{status: 503}
		h := newHandler(t, idempotency.Config{}, c)
		if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 503 {
			t.Fatalf("status %d", w.Code)
		}
		c.status = 201
		if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 201 || w.Header().Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("retry after a 503: %d %v, want a fresh 201", w.Code, w.Header())
		}
		if c.runs.Load() != 2 {
			t.Errorf("runs %d, want 2", c.runs.Load())
		}
	})
	t.Run("4xx is stored", func(t *testing.T) {
		c := &charger{status: 402}
		h := newHandler(t, idempotency.Config{}, c)
		do(h, "POST", "/", `"k"`, "1")
		if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 402 || w.Header().Get(idempotency.ReplayedHeader) != "true" {
			t.Fatalf("retry after a 402: %d, want the 402 replayed", w.Code)
		}
	})
	t.Run("panic", func(t *testing.T) {
		c := &charger{panics: true}
		h := newHandler(t, idempotency.Config{}, c)
		func() {
			defer func() {
				if v := recover(); v != http.ErrAbortHandler {
					t.Errorf("recovered %v, want the handler's panic to go on", v)
				}
			}()
			do(h, "POST", "/", `"k"`, "1")
		}()
		c.panics = false
		if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 201 {
			t.Fatalf("retry after a panic: %d", w.Code)
		}
	})
	t.Run("handler timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &charger{sleep: time.Minute}
			h := newHandler(t, idempotency.Config{HandlerTimeout: time.Second}, c)
			wantProblem(t, do(h, "POST", "/", `"k"`, "1"), 503, idempotency.CodeHandlerTimeout)
			c.sleep = 0
			if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 201 || c.runs.Load() != 2 {
				t.Fatalf("retry after a timeout: %d after %d runs", w.Code, c.runs.Load())
			}
		})
	})
}

func TestLargeResponseNotStored(t *testing.T) {
	c := &charger{body: strings.Repeat("x", 100)}
	h := newHandler(t, idempotency.Config{MaxResponseBody: 10}, c)
	if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 201 || w.Body.Len() != 100 {
		t.Fatalf("first: %d, %d bytes; want 201 and the whole body", w.Code, w.Body.Len())
	}
	wantProblem(t, do(h, "POST", "/", `"k"`, "1"), 409, idempotency.CodeReplayUnavailable)
	if c.runs.Load() != 1 {
		t.Errorf("runs %d, want 1", c.runs.Load())
	}
}

// failingStore fails every call.
type failingStore struct{}

var errDown = errors.New("store down")

func (failingStore) Claim(context.Context, string, idempotency.Fingerprint, time.Duration) (idempotency.Claim, error) {
	return idempotency.Claim{}, errDown
}
func (failingStore) Renew(context.Context, string, uint64, time.Duration) error { return errDown }
func (failingStore) Complete(context.Context, string, uint64, *idempotency.Response, time.Duration) error {
	return errDown
}
func (failingStore) Release(context.Context, string, uint64) error { return errDown }

func TestStoreDown(t *testing.T) {
	c := &charger{}
	var reported atomic.Int32
	h := newHandler(t, idempotency.Config{Store: failingStore{}, OnError: func(*http.Request, error) { reported.Add(1) }}, c)
	for range 3 {
		w := do(h, "POST", "/", `"k"`, "1")
		wantProblem(t, w, 503, idempotency.CodeStoreUnavailable)
	}
	if c.runs.Load() != 0 || reported.Load() != 3 {
		t.Errorf("fail closed: %d runs, %d reports; want 0 and 3", c.runs.Load(), reported.Load())
	}
	h = newHandler(t, idempotency.Config{Store: failingStore{}, FailOpen: true}, c)
	if w := do(h, "POST", "/", `"k"`, "body"); w.Code != 201 || !strings.Contains(w.Body.String(), "body") {
		t.Errorf("fail open: %d %q, want the handler's 201 with the body it read", w.Code, w.Body)
	}
}

// The lease is renewed while the handler runs, so a handler that takes
// many leases' time keeps its key.
func TestLeaseRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemory(t, idempotency.MemoryConfig{})
		c := &charger{sleep: 10 * time.Second}
		h := newHandler(t, idempotency.Config{Store: store, Lease: time.Second}, c)
		go do(h, "POST", "/", `"k"`, "1")
		time.Sleep(5 * time.Second)
		wantProblem(t, do(h, "POST", "/", `"k"`, "1"), 409, idempotency.CodeKeyInFlight)
		time.Sleep(6 * time.Second)
		if w := do(h, "POST", "/", `"k"`, "1"); w.Header().Get(idempotency.ReplayedHeader) != "true" || c.runs.Load() != 1 {
			t.Errorf("after the slow handler: %d, replayed %q, runs %d; want a replay of the single run", w.Code, w.Header().Get(idempotency.ReplayedHeader), c.runs.Load())
		}
	})
}

// deadAfterClaim is the store as a process sees it that claimed a key
// and then lost the store for good (it crashed, or its network died):
// nothing after the claim reaches the store.
type deadAfterClaim struct{ idempotency.Store }

func (deadAfterClaim) Renew(context.Context, string, uint64, time.Duration) error { return errDown }
func (deadAfterClaim) Complete(context.Context, string, uint64, *idempotency.Response, time.Duration) error {
	return errDown
}
func (deadAfterClaim) Release(context.Context, string, uint64) error { return errDown }

// A process that claimed a key and died (it never renews, completes or
// releases) blocks the key until its lease expires; then the key's
// retries, 50 at once on another instance, run the handler exactly once.
func TestDeadHolderRerunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemory(t, idempotency.MemoryConfig{})
		lease := 3 * time.Second
		dead := &charger{block: make(chan struct{}), started: make(chan struct{}, 1)}
		a := newHandler(t, idempotency.Config{Store: deadAfterClaim{store}, Lease: lease}, dead)
		live := &charger{sleep: 100 * time.Millisecond}
		b := newHandler(t, idempotency.Config{Store: store, Lease: lease}, live)

		deadDone := make(chan struct{})
		go func() { do(a, "POST", "/", `"k"`, "1"); close(deadDone) }()
		<-dead.started
		wantProblem(t, do(b, "POST", "/", `"k"`, "1"), 409, idempotency.CodeKeyInFlight)
		time.Sleep(lease)
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() { do(b, "POST", "/", `"k"`, "1") })
		}
		wg.Wait()
		close(dead.block) // the dead process's handler ends; its completion never arrives
		<-deadDone
		w := do(b, "POST", "/", `"k"`, "1")
		if w.Header().Get(idempotency.ReplayedHeader) != "true" || w.Code != 201 {
			t.Errorf("after the re-run: %d, want a replayed 201", w.Code)
		}
		if got := live.runs.Load(); got != 1 {
			t.Errorf("handler ran %d times after the dead holder's lease expired, want exactly 1", got)
		}
	})
}

// flakyComplete fails the first n completions.
type flakyComplete struct {
	idempotency.Store
	n atomic.Int32
}

func (f *flakyComplete) Complete(ctx context.Context, key string, token uint64, resp *idempotency.Response, ttl time.Duration) error {
	if f.n.Add(-1) >= 0 {
		return errDown
	}
	return f.Store.Complete(ctx, key, token, resp, ttl)
}

// A completion that fails is tried again within half a lease, so a
// store's short outage does not leave the record in flight.
func TestCompleteRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &flakyComplete{Store: newMemory(t, idempotency.MemoryConfig{})}
		s.n.Store(3)
		c := &charger{}
		h := newHandler(t, idempotency.Config{Store: s, Lease: time.Second}, c)
		if w := do(h, "POST", "/", `"k"`, "1"); w.Code != 201 {
			t.Fatalf("status %d", w.Code)
		}
		if w := do(h, "POST", "/", `"k"`, "1"); w.Header().Get(idempotency.ReplayedHeader) != "true" {
			t.Errorf("after three failed completions and a fourth that worked: %d, want a replay", w.Code)
		}
		s.n.Store(1000)
		do(h, "POST", "/", `"k2"`, "1")
		time.Sleep(time.Second) // the lease of the record never completed
		do(h, "POST", "/", `"k2"`, "1")
		if got := c.runs.Load(); got != 3 {
			t.Errorf("%d runs, want 3: k once, k2 twice (its completion lost for good, it ran again after the lease)", got)
		}
	})
}
