package unherdhttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// outcomeGuard logs every outcome a guard hears: "ok", the failure's
// class, or "abandoned".
type outcomeGuard struct {
	mu  sync.Mutex
	log []string
}

func (g *outcomeGuard) Admit(context.Context) (uint64, error) { return 0, nil }
func (g *outcomeGuard) Done(_ context.Context, _ uint64, o admission.Outcome) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case o.Abandoned:
		g.log = append(g.log, "abandoned")
	case o.Err == nil:
		g.log = append(g.log, "ok")
	default:
		g.log = append(g.log, o.Class.String())
	}
}

// countingServer answers every request with status and counts them.
func countingServer(t *testing.T, status int) (*url.URL, *atomic.Int32) {
	var hits atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(status)
	})
	u, _ := url.Parse(srv.URL)
	return u, &hits
}

// A request net/http refuses to send fails at once: no retry, no token
// from the budget, and nothing the guards count as a failure.
func TestInvalidRequestFailsAtOnce(t *testing.T) {
	u, hits := countingServer(t, http.StatusOK)
	tests := []struct {
		name string
		req  func() *http.Request
	}{
		{"nil Header", func() *http.Request { return &http.Request{Method: http.MethodGet, URL: u} }},
		{"unsupported scheme", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, "ftp://"+u.Host+"/", nil)
			return r
		}},
		{"invalid header name", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, u.String(), nil)
			r.Header["Bad Name"] = []string{"v"}
			return r
		}},
		{"invalid header value", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, u.String(), nil)
			r.Header.Set("X-Ok", "a\nb")
			return r
		}},
		{"invalid trailer", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPut, u.String(), strings.NewReader("x"))
			r.Trailer = http.Header{"Bad\x00": nil}
			return r
		}},
		{"invalid method", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, u.String(), nil)
			r.Method = "GE T"
			return r
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := budget.NewTokenBucket(budget.TokenBucketConfig{})
			if err != nil {
				t.Fatal(err)
			}
			g := &outcomeGuard{}
			retried := false
			cfg := fast
			cfg.Budget, cfg.Guards = tb, []admission.Guard{g}
			cfg.Observer = observe.On(observe.Retry, func(observe.Event) { retried = true })
			tr := newTransport(t, unherdhttp.Config{Retry: cfg})
			before := hits.Load()
			_, _, err = do(tr, tc.req())
			if !errors.Is(err, unherdhttp.ErrInvalidRequest) || !errors.Is(err, retry.ErrRejected) {
				t.Fatalf("err = %v, want ErrInvalidRequest", err)
			}
			var re *retry.Error
			if !errors.As(err, &re) || re.Attempts != 1 || retried {
				t.Errorf("err = %#v (retried: %v), want one attempt and no retry", err, retried)
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("server saw %d requests, want none", n)
			}
			if tb.Tokens() != tb.Capacity() {
				t.Errorf("budget has %d tokens, want all %d", tb.Tokens(), tb.Capacity())
			}
			if diff := cmp.Diff([]string{"abandoned"}, g.log); diff != "" {
				t.Errorf("guard heard (-want +got):\n%s", diff)
			}
		})
	}
}

// Bad requests cannot open a breaker and lock out good ones.
func TestInvalidRequestsDoNotOpenBreaker(t *testing.T) {
	u, hits := countingServer(t, http.StatusOK)
	b, err := breaker.New(breaker.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fast
	cfg.Guards = []admission.Guard{b}
	tr := newTransport(t, unherdhttp.Config{Retry: cfg})
	for range 2 * breaker.DefaultConsecutiveFailures {
		req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
		req.Header.Set("X-Bad", "a\rb")
		if _, _, err := do(tr, req); !errors.Is(err, unherdhttp.ErrInvalidRequest) {
			t.Fatalf("err = %v, want ErrInvalidRequest", err)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
	if status, _, err := do(tr, req); err != nil || status != 200 || hits.Load() != 1 {
		t.Fatalf("good request: %d, %v (server saw %d); want 200 from the server", status, err, hits.Load())
	}
}

// A 5xx this package does not name is a server failure like 500: the
// guards count it, and it is retried unless NoRetry500.
func TestUnknown5xx(t *testing.T) {
	for _, code := range []int{505, 507, 520, 527, 599} {
		for _, noRetry500 := range []bool{false, true} {
			u, hits := countingServer(t, code)
			g := &outcomeGuard{}
			cfg := fast
			cfg.Guards = []admission.Guard{g}
			tr := newTransport(t, unherdhttp.Config{Retry: cfg, NoRetry500: noRetry500})
			req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
			status, _, err := do(tr, req)
			if err != nil || status != code {
				t.Fatalf("%d (NoRetry500 %v): got %d, %v; want the response", code, noRetry500, status, err)
			}
			want := []string{"transient"}
			if !noRetry500 {
				want = []string{"transient", "transient", "transient"}
			}
			if int(hits.Load()) != len(want) {
				t.Errorf("%d (NoRetry500 %v): server saw %d requests, want %d", code, noRetry500, hits.Load(), len(want))
			}
			if diff := cmp.Diff(want, g.log); diff != "" {
				t.Errorf("%d (NoRetry500 %v): guard heard (-want +got):\n%s", code, noRetry500, diff)
			}
		}
	}
}

// An https request to a plain HTTP server is permanent, and callers see
// http.ErrSchemeMismatch as with plain net/http, through the Transport
// and through an http.Client.
func TestSchemeMismatchIsPermanent(t *testing.T) {
	u, _ := countingServer(t, http.StatusOK)
	target := "https://" + u.Host + "/"
	retried := false
	cfg := fast
	cfg.Observer = observe.On(observe.Retry, func(observe.Event) { retried = true })
	tr := newTransport(t, unherdhttp.Config{Retry: cfg})
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	_, _, err := do(tr, req)
	var re *retry.Error
	if !errors.Is(err, http.ErrSchemeMismatch) || !errors.As(err, &re) || re.Reason != retry.ErrPermanent || re.Attempts != 1 || retried {
		t.Fatalf("err = %v (retried: %v), want ErrSchemeMismatch, permanent, after one attempt", err, retried)
	}
	client := &http.Client{Transport: tr}
	if _, err := client.Get(target); !errors.Is(err, http.ErrSchemeMismatch) {
		t.Fatalf("through http.Client: err = %v, want ErrSchemeMismatch", err)
	}
}
