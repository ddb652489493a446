package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/configtest"
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
	return configtest.Must(idempotency.New(cfg))(t).Handler(h)
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
	h := newHandler(t, idempotency.Config{Wait: -1}, c)
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do(h, "POST", "/", `"k"`, "1") }()
	await.Recv(t, c.started, "the first request's handler to start")
	w := do(h, "POST", "/", `"k"`, "1")
	wantProblem(t, w, 409, idempotency.CodeKeyInFlight)
	if w.Header().Get("Retry-After") == "" {
		t.Error("409 without Retry-After")
	}
	wantProblem(t, do(h, "POST", "/", `"k"`, "2"), 422, idempotency.CodeKeyMismatch)
	close(c.block)
	if w := await.Recv(t, done, "the first request's answer"); w.Code != 201 {
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
		h := newHandler(t, idempotency.Config{Store: store, Lease: time.Second, Wait: -1}, c)
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
		b := newHandler(t, idempotency.Config{Store: store, Lease: lease, Wait: -1}, live)

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

// post sends one keyed POST over a real connection and returns the status,
// the replay header and the body.
func post(t *testing.T, c *http.Client, url, key, account string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/charges", strings.NewReader(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(idempotency.KeyHeader, key)
	if account != "" {
		req.Header.Set("X-Account", account)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(idempotency.ReplayedHeader), string(b)
}

func serve(t *testing.T, cfg idempotency.Config, h http.Handler) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(newHandler(t, cfg, h))
	c := srv.Client()
	t.Cleanup(func() {
		c.CloseIdleConnections()
		srv.Close()
	})
	return srv.URL, c
}

// A flood of keys that fills the store does not make it forget a
// completed record: the victim's retry is replayed, and the handler does
// not run a second time. The flooder gets 503s once the store is full.
func TestMemoryFloodKeepsCompleted(t *testing.T) {
	store := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 16 << 10})
	const victimKey = `"victim-charge-1"`
	var victimRuns atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(idempotency.KeyHeader) == victimKey {
			victimRuns.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"ch_1","amount":100}`)
	})
	url, c := serve(t, idempotency.Config{Store: store}, h)

	if st, _, _ := post(t, c, url, victimKey, ""); st != http.StatusCreated {
		t.Fatalf("victim's first request: %d", st)
	}
	const flood = 1000 // over ten times what 16 KiB holds
	refused := 0
	for i := 0; i < flood && refused < 20; i++ {
		switch st, _, _ := post(t, c, url, `"flood-`+strconv.Itoa(i)+`"`, ""); st {
		case http.StatusCreated:
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("flood request %d: status %d", i, st)
		}
	}
	st, replayed, body := post(t, c, url, victimKey, "")
	t.Logf("after the flood (%d refused): victim's retry %d replayed=%q; handler ran %d times for the victim's key; %d records held",
		refused, st, replayed, victimRuns.Load(), store.Len())
	if n := victimRuns.Load(); n != 1 {
		t.Errorf("the victim's handler ran %d times, want 1", n)
	}
	if st != http.StatusCreated || replayed != "true" || !strings.Contains(body, "ch_1") {
		t.Errorf("victim's retry: %d replayed=%q %q, want the stored 201 replayed", st, replayed, body)
	}
	if refused == 0 {
		t.Errorf("the flood of %d keys was never refused: the store forgot records to make room", flood)
	}
}

// One principal holding as many keys in flight as it can does not leave
// the others without room: it is refused past its share, and another
// principal's new key still runs.
func TestMemoryShareBoundsPrincipal(t *testing.T) {
	store := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 32 << 10})
	const attackers = 300 // in flight at once: about twice what 32 KiB holds
	release := make(chan struct{})
	settled := make(chan struct{}, attackers) // one per attacker request that runs or is refused
	var attackerRuns, victimRuns atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Account") == "attacker" {
			attackerRuns.Add(1)
			settled <- struct{}{}
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		} else {
			victimRuns.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	})
	cfg := idempotency.Config{Store: store, Principal: func(r *http.Request) string { return r.Header.Get("X-Account") }}
	url, c := serve(t, cfg, h)

	var refused atomic.Int32
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Go(func() {
			if st, _, _ := post(t, c, url, `"a-`+strconv.Itoa(i)+`"`, "attacker"); st == http.StatusServiceUnavailable {
				refused.Add(1)
				settled <- struct{}{}
			}
		})
	}
	defer func() {
		close(release)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the attacker's requests did not end within 20 s of their release")
		}
	}()
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	for range attackers {
		select {
		case <-settled:
		case <-timer.C:
			t.Fatalf("after 15 s, %d attacker requests run and %d were refused, of %d", attackerRuns.Load(), refused.Load(), attackers)
		}
	}
	st, _, _ := post(t, c, url, `"v-1"`, "victim")
	t.Logf("attacker: %d in flight, %d refused; victim's new key: %d, victim's handler ran %d times", attackerRuns.Load(), refused.Load(), st, victimRuns.Load())
	if st != http.StatusCreated || victimRuns.Load() != 1 {
		t.Errorf("victim's new key while the attacker floods: %d, handler ran %d times; want 201, once", st, victimRuns.Load())
	}
	if refused.Load() == 0 {
		t.Error("the attacker was never refused")
	}
}

// heapAlloc returns the live heap after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// MaxBytes bounds the heap the store holds: a flood of small records,
// then (once they expired) one of larger ones, then one of small records
// each of its own principal, never takes the live heap past 1.25 times
// MaxBytes. What the store holds is measured as the live
// heap with the store less the live heap once it is dropped, at the end,
// so that other tests' objects do not blur it.
func TestMemoryMaxBytesBoundsHeap(t *testing.T) {
	const maxBytes = 8 << 20
	const flood = 120_000 // five times what 8 MiB holds
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(t, idempotency.MemoryConfig{MaxBytes: maxBytes})
		hdr := http.Header{"Content-Type": {"application/json"}}
		type phase struct {
			name             string
			heap             int64
			refused, held, n int
		}
		var phases []phase
		fill := func(name string, n int, body []byte, principals bool) {
			p := phase{name: name, n: n}
			for i := range n {
				key := name + "-" + strconv.Itoa(i)
				ctx := ctx
				if principals {
					ctx = idempotency.WithPrincipal(ctx, "principal-"+strconv.Itoa(i))
				}
				c, err := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Minute)
				if err != nil {
					p.refused++
					continue
				}
				if err := m.Complete(ctx, key, c.Token, &idempotency.Response{Status: 201, Header: hdr, Body: body}, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			p.heap, p.held = heapAlloc(), m.Len()
			phases = append(phases, p)
		}
		fill("small", flood, make([]byte, 32), false)
		time.Sleep(2 * time.Hour) // every record expires
		fill("large", flood/20, make([]byte, 2000), false)
		time.Sleep(2 * time.Hour)
		fill("principals", flood, make([]byte, 32), true)
		runtime.KeepAlive(m)
		m = nil
		base := heapAlloc()
		for _, p := range phases {
			grew := p.heap - base
			t.Logf("%s: %d keys, %d refused, %d held: the store holds %.1f MiB, MaxBytes %.1f MiB (%.2fx)",
				p.name, p.n, p.refused, p.held, float64(grew)/(1<<20), float64(maxBytes)/(1<<20), float64(grew)/maxBytes)
			if grew > maxBytes*5/4 {
				t.Errorf("%s: the store holds %d bytes, over 1.25 x MaxBytes (%d)", p.name, grew, maxBytes)
			}
		}
	})
}

// A full store is answered 503 store-full, and nothing runs, even with
// FailOpen: a flood of keys must not turn idempotency off.
func TestStoreFullFailsClosed(t *testing.T) {
	store := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 4 << 10})
	c := &charger{}
	h := newHandler(t, idempotency.Config{Store: store, FailOpen: true}, c)
	for i := range 100 {
		w := do(h, "POST", "/charges", `"k`+strconv.Itoa(i)+`"`, "1")
		if w.Code == http.StatusCreated {
			continue
		}
		wantProblem(t, w, http.StatusServiceUnavailable, idempotency.CodeStoreFull)
		if w.Header().Get("Retry-After") == "" {
			t.Error("a store-full answer without Retry-After")
		}
		if int(c.runs.Load()) != i {
			t.Errorf("%d runs for %d keys stored: the refused request ran", c.runs.Load(), i)
		}
		return
	}
	t.Fatal("100 keys fit in 4 KiB")
}
