package unherdhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/timeout"
	"github.com/unherd/unherd/unherdhttp"
)

// These tests run on real sockets, outside synctest's bubble, so their
// timeouts are real: short, and assertions are about behaviour (what was
// retried, what came back), never about how long anything took. The
// timeout must still let a healthy loopback request through on a
// loaded machine running the race detector.
const shortTimeout = 200 * time.Millisecond

// hangingServerURL starts a server that never answers a request whose
// attempt header is in hang (until the client gives up), and answers 200
// "body" to the others. It returns the server's URL and its request count.
func hangingServerURL(t *testing.T, hang ...string) (string, *atomic.Int32) {
	var hits atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		for _, h := range hang {
			if r.Header.Get(unherdhttp.AttemptHeader) == h {
				<-r.Context().Done() // the client closed the connection
				return
			}
		}
		io.WriteString(w, "body")
	})
	return srv.URL, &hits
}

func TestAttemptTimeout(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		hang       []string // attempt headers the server never answers
		wantHits   int32
		wantStatus int
		wantErr    []error
	}{
		{"server never answers", http.MethodGet, []string{"", "2", "3"}, 3, 0, []error{retry.ErrAttemptTimeout, retry.ErrAttemptsExhausted}},
		{"retry answers", http.MethodGet, []string{""}, 2, 200, nil},
		{"POST timed out after it was sent is not retried", http.MethodPost, []string{""}, 1, 0, []error{retry.ErrAttemptTimeout, retry.ErrFinal}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, hits := hangingServerURL(t, tc.hang...)
			var classes []failure.Class
			tr := newTransport(t, unherdhttp.Config{
				Retry: retry.Config{AttemptTimeout: shortTimeout, Backoff: fast.Backoff, Observer: observe.On(observe.Retry, func(ev observe.Event) {
					classes = append(classes, ev.Class)
				})},
			})
			req, _ := http.NewRequest(tc.method, srv, strings.NewReader("x"))
			status, body, err := do(tr, req)
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %v", err, want)
				}
			}
			if tc.wantErr == nil && (err != nil || status != tc.wantStatus || body != "body") {
				t.Errorf("got %d %q, %v; want %d %q", status, body, err, tc.wantStatus, "body")
			}
			if got := hits.Load(); got != tc.wantHits {
				t.Errorf("server saw %d requests, want %d", got, tc.wantHits)
			}
			for _, c := range classes {
				if c != failure.Timeout {
					t.Errorf("retried as %v, want timeout", c)
				}
			}
		})
	}
}

// The attempt timeout covers time to headers only: a body that arrives
// after it would have expired is still read in full.
func TestBodyOutlivesAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow-body":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			if !await.Within(release) { // the test stopped before it released the body
				t.Errorf("the slow body's handler waited %v for the test to release it", await.Timeout)
			}
			io.WriteString(w, "late body")
		case "/hang":
			<-r.Context().Done()
		}
	})
	tr := newTransport(t, unherdhttp.Config{Retry: retry.Config{AttemptTimeout: shortTimeout, MaxAttempts: 1}})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/slow-body", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// An attempt that times out proves that more than the attempt timeout
	// has passed since the first response's headers arrived.
	hang, _ := http.NewRequest(http.MethodGet, srv.URL+"/hang", nil)
	if _, _, err := do(tr, hang); !errors.Is(err, retry.ErrAttemptTimeout) {
		t.Fatalf("hanging request: got %v, want an attempt timeout", err)
	}
	close(release)
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "late body" {
		t.Errorf("body %q, %v; want %q", b, err, "late body")
	}
}

// An attempt that times out before it has a connection never reached the
// server, so even a POST is retried.
func TestConnectPhaseTimeoutRetriesPost(t *testing.T) {
	url, hits := hangingServerURL(t)
	var dials atomic.Int32
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			<-ctx.Done() // a connect that hangs, as to a host whose SYNs are dropped
			return nil, ctx.Err()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{ConnectTimeout: shortTimeout, Retry: withAttemptTimeout(fast, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("x"))
	status, body, err := do(tr, req)
	if err != nil || status != 200 || body != "body" {
		t.Fatalf("got %d %q, %v; want 200 %q", status, body, err, "body")
	}
	if dials.Load() != 2 || hits.Load() != 1 {
		t.Errorf("%d dials and %d requests at the server, want 2 and 1", dials.Load(), hits.Load())
	}
}

// fixedTimeouts is a TimeoutSource with a fixed timeout that records what
// it observes.
type fixedTimeouts struct {
	d   time.Duration
	mu  sync.Mutex
	oks []bool
}

func (f *fixedTimeouts) AttemptTimeout() time.Duration { return f.d }
func (f *fixedTimeouts) Observe(latency time.Duration, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if latency < 0 {
		panic("negative latency")
	}
	f.oks = append(f.oks, ok)
}

func TestTimeoutSource(t *testing.T) {
	url, hits := hangingServerURL(t, "")
	src := &fixedTimeouts{d: shortTimeout}
	tr := newTransport(t, unherdhttp.Config{Retry: withTimeouts(fast, src)})
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if status, _, err := do(tr, req); err != nil || status != 200 {
		t.Fatalf("got %d, %v; want 200", status, err)
	}
	if hits.Load() != 2 {
		t.Errorf("server saw %d requests, want 2", hits.Load())
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.oks) != 2 || src.oks[0] || !src.oks[1] {
		t.Errorf("observed %v, want a timeout then a success", src.oks)
	}
}

// With a timeout source, each response is classified once: the judgment
// that decides the attempt's outcome also decides whether its latency is
// a sample (a 503 is not; the 200 after it is).
func TestTimeoutSourceClassifiesOnce(t *testing.T) {
	var hits atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "body")
	})
	var hooked atomic.Int32
	src := &fixedTimeouts{d: time.Hour}
	tr := newTransport(t, unherdhttp.Config{Retry: withTimeouts(fast, src),
		Classify: func(resp *http.Response, err error) (failure.Class, bool) {
			if resp != nil {
				hooked.Add(1)
			}
			return 0, false
		}})
	status, body, err := get(t, tr, srv.URL)
	if err != nil || status != 200 || body != "body" || hits.Load() != 2 {
		t.Fatalf("got %d %q, %v after %d requests; want 200 body after 2", status, body, err, hits.Load())
	}
	if n := hooked.Load(); n != 2 {
		t.Errorf("Classify saw %d responses, want 2 (once each)", n)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.oks) != 2 || src.oks[0] || !src.oks[1] {
		t.Errorf("observed %v, want a failure then a success", src.oks)
	}
}

// The caller's own deadline is never retried, even with an attempt
// timeout in force.
func TestCallerDeadlineNotRetried(t *testing.T) {
	url, hits := hangingServerURL(t, "", "2", "3")
	tr := newTransport(t, unherdhttp.Config{Retry: withAttemptTimeout(fast, time.Hour)})
	ctx, cancel := context.WithTimeout(context.Background(), shortTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	_, _, err := do(tr, req)
	if !errors.Is(err, retry.ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want cancelled by the deadline", err)
	}
	if hits.Load() != 1 {
		t.Errorf("server saw %d requests, want 1", hits.Load())
	}
}

// The adaptive timeout of package timeout plugs in as Config.Retry.Timeouts and
// bounds every attempt (here by its initial timeout).
func TestAdaptiveTimeout(t *testing.T) {
	url, hits := hangingServerURL(t, "")
	a, err := timeout.New(timeout.Config{FalseTimeoutRate: 0.5, Initial: shortTimeout, Window: 4})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTransport(t, unherdhttp.Config{Retry: withTimeouts(fast, a)})
	status, body, err := get(t, tr, url)
	if err != nil || status != 200 || body != "body" || hits.Load() != 2 {
		t.Fatalf("got %d %q, %v after %d requests; want 200 body after 2", status, body, err, hits.Load())
	}
}

// Over HTTP/2 and TLS the attempt timeout starts at the connection too:
// a timed-out GET is retried on the same multiplexed connection, and a
// POST that timed out after it had a connection is not.
func TestAttemptTimeoutHTTP2(t *testing.T) {
	tests := []struct {
		method   string
		wantHits int32
		wantBody string
	}{
		{http.MethodGet, 2, "HTTP/2.0"},
		{http.MethodPost, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if r.Header.Get(unherdhttp.AttemptHeader) == "" {
					<-r.Context().Done()
					return
				}
				io.WriteString(w, r.Proto)
			}))
			srv.EnableHTTP2 = true
			srv.StartTLS()
			t.Cleanup(srv.Close)
			base := srv.Client().Transport.(*http.Transport)
			t.Cleanup(base.CloseIdleConnections)
			tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{Retry: withAttemptTimeout(fast, shortTimeout)})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(tc.method, srv.URL, strings.NewReader("x"))
			status, body, err := do(tr, req)
			if tc.wantBody == "" {
				var nr *unherdhttp.NotReplayedError
				if !errors.As(err, &nr) || !errors.Is(err, retry.ErrAttemptTimeout) {
					t.Errorf("got %d, %v; want a timed-out NotReplayedError", status, err)
				}
			} else if err != nil || status != 200 || body != tc.wantBody {
				t.Errorf("got %d %q, %v; want 200 %q", status, body, err, tc.wantBody)
			}
			if hits.Load() != tc.wantHits {
				t.Errorf("server saw %d requests, want %d", hits.Load(), tc.wantHits)
			}
		})
	}
}

// slowBase is a base transport that is not an *http.Transport, so it
// reports no connection through httptrace: it answers 200 "ok" after
// delay, or fails when the request's context ends first.
type slowBase struct{ delay time.Duration }

func (b *slowBase) RoundTrip(r *http.Request) (*http.Response, error) {
	tm := time.NewTimer(b.delay)
	defer tm.Stop()
	select {
	case <-tm.C:
		return &http.Response{StatusCode: 200, Request: r, Body: io.NopCloser(strings.NewReader("ok"))}, nil
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
}

// With a base that reports no connection, AttemptTimeout bounds the whole
// attempt from its start: not ConnectTimeout (5 s), which only a reported
// connection would switch to AttemptTimeout.
func TestAttemptTimeoutUntracedBase(t *testing.T) {
	tests := []struct {
		name        string
		attempt     time.Duration
		answer      time.Duration
		wantStatus  int
		wantErr     error
		wantElapsed time.Duration
	}{
		{"100ms timeout, answer after 3s", 100 * time.Millisecond, 3 * time.Second, 0, retry.ErrAttemptTimeout, 100 * time.Millisecond},
		{"30s timeout, answer after 10s", 30 * time.Second, 10 * time.Second, 200, nil, 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, err := unherdhttp.NewTransport(&slowBase{delay: tc.answer}, unherdhttp.Config{
					Retry: retry.Config{AttemptTimeout: tc.attempt, MaxAttempts: 1},
				})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				status, _, err := get(t, tr, "http://example.invalid/")
				if elapsed := time.Since(start); elapsed != tc.wantElapsed {
					t.Errorf("attempt took %v, want %v", elapsed, tc.wantElapsed)
				}
				if status != tc.wantStatus || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Errorf("got %d, %v; want %d, %v", status, err, tc.wantStatus, tc.wantErr)
				}
			})
		})
	}
}

// deafBase answers 200 after delay whatever the request context says.
type deafBase struct{ delay time.Duration }

func (b *deafBase) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(b.delay) // virtual time: the tests run it under synctest
	return &http.Response{StatusCode: 200, Request: r, Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

// A response that arrives at the instant the attempt timeout fires counts
// as the timeout (its context is gone, the body would fail mid-read), even
// when the timer's callback has not yet cancelled that context.
func TestAttemptTimeoutSameInstant(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		t.Run(fmt.Sprintf("hedged=%v", hedged), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := unherdhttp.Config{Retry: retry.Config{AttemptTimeout: 10 * time.Millisecond, MaxAttempts: 1}}
				if hedged {
					h, err := hedge.New(hedge.Config{Delay: 5 * time.Millisecond, Budget: budget.Unlimited})
					if err != nil {
						t.Fatal(err)
					}
					cfg.Hedge = h
				}
				tr, err := unherdhttp.NewTransport(&deafBase{delay: 10 * time.Millisecond}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				for range 20 {
					status, _, err := get(t, tr, "http://example.invalid/")
					if err != nil && !errors.Is(err, retry.ErrAttemptTimeout) {
						t.Fatalf("got %d, %v; want 200 or an attempt timeout", status, err)
					}
				}
			})
		})
	}
}

// withAttemptTimeout returns c with its AttemptTimeout set to d.
func withAttemptTimeout(c retry.Config, d time.Duration) retry.Config {
	c.AttemptTimeout = d
	return c
}

// withTimeouts returns c with its Timeouts set to src.
func withTimeouts(c retry.Config, src timeout.Source) retry.Config {
	c.Timeouts = src
	return c
}
