package unherdhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// failFirst answers status (with body "fail N") to the first n requests
// and 200 "ok N" after, counting requests and recording the attempt
// header of each.
type failFirst struct {
	n, status int
	mu        sync.Mutex
	hits      int
	attempts  []string
}

func (f *failFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits++
	hit := f.hits
	f.attempts = append(f.attempts, r.Header.Get(unherdhttp.AttemptHeader))
	f.mu.Unlock()
	if hit <= f.n {
		w.WriteHeader(f.status)
		io.WriteString(w, "fail "+strconv.Itoa(hit))
		return
	}
	io.WriteString(w, "ok "+strconv.Itoa(hit))
}

func (f *failFirst) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

// get sends a GET through rt and returns the status and the body.
func get(t *testing.T, rt http.RoundTripper, url string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(rt, req)
}

func do(rt http.RoundTripper, req *http.Request) (int, string, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if resp != nil {
			return 0, "", errors.New("RoundTrip returned both a response and an error")
		}
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestStatusClassification(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		noRetry500 bool
		wantHits   int
		wantStatus int
		wantBody   string
	}{
		// Retryable statuses: the first attempt fails, the retry succeeds.
		{"408 retried", 408, false, 2, 200, "ok 2"},
		{"429 retried", 429, false, 2, 200, "ok 2"},
		{"502 retried", 502, false, 2, 200, "ok 2"},
		{"503 retried", 503, false, 2, 200, "ok 2"},
		{"504 retried", 504, false, 2, 200, "ok 2"},
		{"500 retried by default", 500, false, 2, 200, "ok 2"},
		{"505 retried by default", 505, false, 2, 200, "ok 2"},
		// Permanent statuses go back at once.
		{"500 not retried with NoRetry500", 500, true, 1, 500, "fail 1"},
		{"501 permanent", 501, false, 1, 501, "fail 1"},
		{"400 permanent", 400, false, 1, 400, "fail 1"},
		{"404 permanent", 404, false, 1, 404, "fail 1"},
		{"409 permanent", 409, false, 1, 409, "fail 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &failFirst{n: 1, status: tc.status}
			srv := newServer(t, f.ServeHTTP)
			tr := newTransport(t, unherdhttp.Config{Retry: fast, NoRetry500: tc.noRetry500})
			status, body, err := get(t, tr, srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.wantStatus || body != tc.wantBody || f.count() != tc.wantHits {
				t.Errorf("got %d %q after %d requests, want %d %q after %d", status, body, f.count(), tc.wantStatus, tc.wantBody, tc.wantHits)
			}
		})
	}
}

// When the loop runs out of attempts on a retryable status, the caller
// gets the last response, readable, and a nil error; the server saw the
// attempt header on every repeat.
func TestLastResponseReturned(t *testing.T) {
	f := &failFirst{n: 100, status: http.StatusServiceUnavailable}
	srv := newServer(t, f.ServeHTTP)
	tr := newTransport(t, unherdhttp.Config{Retry: fast})
	status, body, err := get(t, tr, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if status != 503 || body != "fail 3" {
		t.Errorf("got %d %q, want the third response, 503 %q", status, body, "fail 3")
	}
	if diff := cmp.Diff([]string{"", "2", "3"}, f.attempts); diff != "" {
		t.Errorf("attempt headers (-want +got):\n%s", diff)
	}
}

// Discarded responses are drained and closed, so the retry reuses the
// connection.
func TestDiscardedResponseReusesConnection(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(unherdhttp.AttemptHeader) == "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, strings.Repeat("x", 1000))
			return
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t, unherdhttp.Config{Retry: fast})
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, srv.URL, nil)
	if status, _, err := do(tr, req); err != nil || status != 200 {
		t.Fatalf("got %d, %v; want 200", status, err)
	}
	if diff := cmp.Diff([]bool{false, true}, reused); diff != "" {
		t.Errorf("connection reuse per attempt (-want +got):\n%s", diff)
	}
}

// The caller's request comes out of RoundTrip as it went in, even after
// retries with buffered bodies and automatic keys.
func TestRequestNotModified(t *testing.T) {
	f := &failFirst{n: 2, status: http.StatusServiceUnavailable}
	srv := newServer(t, f.ServeHTTP)
	tr := newTransport(t, unherdhttp.Config{Retry: fast, AutoIdempotencyKey: true})
	for _, withGetBody := range []bool{true, false} {
		var body io.Reader = strings.NewReader("payload")
		if !withGetBody {
			body = io.MultiReader(body) // hides the type: no GetBody
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/path?q=1", body)
		req.Header.Set("X-Custom", "a")
		type snapshot struct {
			Method, URL, Host string
			Header            http.Header
			ContentLength     int64
			HasGetBody        bool
		}
		snap := func() snapshot {
			return snapshot{req.Method, req.URL.String(), req.Host, req.Header.Clone(), req.ContentLength, req.GetBody != nil}
		}
		before := snap()
		status, _, err := do(tr, req)
		if err != nil || status != 200 {
			t.Fatalf("GetBody %v: got %d, %v; want 200", withGetBody, status, err)
		}
		if diff := cmp.Diff(before, snap()); diff != "" {
			t.Errorf("GetBody %v: request changed (-before +after):\n%s", withGetBody, diff)
		}
		f.mu.Lock()
		f.hits = 0
		f.mu.Unlock()
	}
}

// Many goroutines share one Transport; run under -race.
func TestConcurrentUse(t *testing.T) {
	var n atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.Header.Get(unherdhttp.AttemptHeader) == "" {
			w.WriteHeader(http.StatusBadGateway) // every first attempt fails
			return
		}
		io.WriteString(w, "ok")
	})
	// An unlimited budget: this test is about sharing, and half of all
	// attempts fail.
	tr := newTransport(t, unherdhttp.Config{Retry: retry.Config{Backoff: fast.Backoff, Budget: budget.Unlimited}})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 40 {
		wg.Go(func() {
			for range 5 {
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				status, body, err := do(tr, req)
				if err == nil && (status != 200 || body != "ok") {
					err = errors.New("got " + strconv.Itoa(status) + " " + body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := n.Load(); got != 2*40*5 {
		t.Errorf("server saw %d requests, want two for each of 200", got)
	}
}

// A Classify hook overrides the default rules, within replay safety.
func TestClassifyHook(t *testing.T) {
	f := &failFirst{n: 1, status: http.StatusNotFound}
	srv := newServer(t, f.ServeHTTP)
	tr := newTransport(t, unherdhttp.Config{Retry: fast, Classify: func(resp *http.Response, err error) (failure.Class, bool) {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return failure.Transient, true // eventually consistent reads
		}
		return 0, false
	}})
	status, body, err := get(t, tr, srv.URL)
	if err != nil || status != 200 || body != "ok 2" {
		t.Fatalf("got %d %q, %v; want 200 %q", status, body, err, "ok 2")
	}
}

// A Classify hook that leaves a 500 to the default rules (ok false)
// leaves the 500 rule in force: retried, but not with NoRetry500. A hook
// that classifies the 500 itself overrides NoRetry500.
func TestClassifyHookKeeps500Rule(t *testing.T) {
	defaults := func(*http.Response, error) (failure.Class, bool) { return 0, false }
	transient500 := func(resp *http.Response, _ error) (failure.Class, bool) {
		if resp != nil && resp.StatusCode == http.StatusInternalServerError {
			return failure.Transient, true
		}
		return 0, false
	}
	tests := []struct {
		name       string
		classify   func(*http.Response, error) (failure.Class, bool)
		noRetry500 bool
		wantHits   int
		wantStatus int
	}{
		{"hook defers: 500 retried", defaults, false, 2, 200},
		{"hook defers, NoRetry500: 500 not retried", defaults, true, 1, 500},
		{"hook classifies 500 as transient, NoRetry500: retried", transient500, true, 2, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &failFirst{n: 1, status: http.StatusInternalServerError}
			srv := newServer(t, f.ServeHTTP)
			tr := newTransport(t, unherdhttp.Config{Retry: fast, NoRetry500: tc.noRetry500, Classify: tc.classify})
			status, _, err := get(t, tr, srv.URL)
			if err != nil || status != tc.wantStatus || f.count() != tc.wantHits {
				t.Errorf("got %d, %v after %d requests; want %d after %d", status, err, f.count(), tc.wantStatus, tc.wantHits)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	row := configtest.Row[unherdhttp.Config]
	configtest.Check(t, unherdhttp.ErrInvalidConfig, func(c unherdhttp.Config) error { _, err := unherdhttp.NewTransport(nil, c); return err }, []configtest.Case[unherdhttp.Config]{
		row("negative connect timeout", unherdhttp.Config{ConnectTimeout: -1}, false),
		row("negative attempt timeout", unherdhttp.Config{Retry: retry.Config{AttemptTimeout: -1}}, false),
		row("retry attempt timeout", unherdhttp.Config{Retry: retry.Config{AttemptTimeout: 1e9}}, true),
		row("invalid retry config", unherdhttp.Config{Retry: retry.Config{MaxAttempts: -1}}, false),
	})
}

// rejectAll is a guard that refuses every attempt.
type rejectAll struct{}

var errOpen = errors.New("breaker open")

func (rejectAll) Admit(context.Context) (uint64, error)           { return 0, errOpen }
func (rejectAll) Done(context.Context, uint64, admission.Outcome) {}

// closeCounter is a request body that counts its closes.
type closeCounter struct {
	io.Reader
	n atomic.Int32
}

func (c *closeCounter) Close() error { c.n.Add(1); return nil }

// A request a guard rejects is never sent, and its body is still closed,
// as the RoundTripper contract requires.
func TestGuardRejectionClosesBody(t *testing.T) {
	tests := []struct {
		name      string
		maxBuffer int64
	}{
		{"buffered body", 0},
		{"unbuffered body", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct := &countingTransport{base: http.DefaultTransport}
			tr, err := unherdhttp.NewTransport(ct, unherdhttp.Config{MaxBufferedBody: tc.maxBuffer, Retry: retry.Config{Guards: []admission.Guard{rejectAll{}}}})
			if err != nil {
				t.Fatal(err)
			}
			body := &closeCounter{Reader: strings.NewReader("payload")}
			req, _ := http.NewRequest(http.MethodPut, "http://example.invalid/", body)
			_, _, err = do(tr, req)
			if !errors.Is(err, retry.ErrRejected) || !errors.Is(err, errOpen) {
				t.Errorf("got %v, want the guard's rejection", err)
			}
			if ct.n.Load() != 0 || body.n.Load() != 1 {
				t.Errorf("%d requests sent and body closed %d times, want 0 and 1", ct.n.Load(), body.n.Load())
			}
		})
	}
}

// A failure the transport does not repeat still reaches guards with its own
// class, so a circuit breaker counts 500s and 503s to a POST.
func TestGuardsSeeServerFailures(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		status     int
		noRetry500 bool
		want       []string
	}{
		{"500 not retried (NoRetry500) is transient", http.MethodGet, 500, true, []string{"transient"}},
		{"503 to a POST is throttled", http.MethodPost, 503, false, []string{"throttled"}},
		{"404 is permanent", http.MethodGet, 404, false, []string{"permanent"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &failFirst{n: 9, status: tc.status}
			srv := newServer(t, f.ServeHTTP)
			g := &outcomeGuard{}
			cfg := fast
			cfg.Guards = []admission.Guard{g}
			tr := newTransport(t, unherdhttp.Config{Retry: cfg, NoRetry500: tc.noRetry500})
			req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			status, _, err := do(tr, req)
			if err != nil || status != tc.status || f.count() != 1 {
				t.Fatalf("got %d, %v after %d requests", status, err, f.count())
			}
			if diff := cmp.Diff(tc.want, g.log); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}
