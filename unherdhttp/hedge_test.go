package unherdhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// newHedger returns a Hedger that always hedges after delay.
func newHedger(t *testing.T, delay time.Duration) *hedge.Hedger {
	t.Helper()
	h, err := hedge.New(hedge.Config{Delay: delay, Budget: budget.Unlimited, MinWinShare: -1})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A GET whose primary hangs is answered by its hedge, which carries the
// attempt header; the primary is cancelled.
func TestHedgeWins(t *testing.T) {
	var mu sync.Mutex
	var attempts []string
	primaryCancelled := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get(unherdhttp.AttemptHeader)
		mu.Lock()
		attempts = append(attempts, a)
		mu.Unlock()
		if a == "" {
			<-r.Context().Done()
			close(primaryCancelled)
			return
		}
		io.WriteString(w, "hedge "+a)
	})
	tr := newTransport(t, unherdhttp.Config{Hedge: newHedger(t, 5*time.Millisecond), Retry: fast})
	status, body, err := get(t, tr, srv.URL)
	if err != nil || status != 200 || body != "hedge 2" {
		t.Fatalf("got %d %q, %v; want 200 %q", status, body, err, "hedge 2")
	}
	<-primaryCancelled // the server saw the primary's connection end
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"", "2"}, attempts); diff != "" {
		t.Errorf("attempt headers (-want +got):\n%s", diff)
	}
}

// lateBase is a base transport whose primary request (no attempt header)
// waits until it is cancelled and then answers anyway, as a response
// already on its way would; hedges answer at once. It counts closed
// response bodies.
type lateBase struct {
	calls  atomic.Int32
	closed chan string
}

func (b *lateBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.calls.Add(1)
	name := "hedge"
	if r.Header.Get(unherdhttp.AttemptHeader) == "" {
		name = "primary"
		<-r.Context().Done()
	}
	return &http.Response{StatusCode: 200, Request: r,
		Body: &closeRecorder{Reader: strings.NewReader(name), name: name, closed: b.closed}}, nil
}

type closeRecorder struct {
	*strings.Reader
	name   string
	closed chan string
}

func (c *closeRecorder) Close() error { c.closed <- c.name; return nil }

// A hedge that loses but still gets a response has its body closed.
func TestHedgeLoserBodyClosed(t *testing.T) {
	base := &lateBase{closed: make(chan string, 2)}
	tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{Hedge: newHedger(t, time.Millisecond), Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	status, body, err := get(t, tr, "http://example.invalid/")
	if err != nil || status != 200 || body != "hedge" {
		t.Fatalf("got %d %q, %v; want 200 hedge", status, body, err)
	}
	got := []string{<-base.closed, <-base.closed}
	if !cmp.Equal(got, []string{"primary", "hedge"}) && !cmp.Equal(got, []string{"hedge", "primary"}) {
		t.Errorf("closed bodies %v, want the primary's and the hedge's", got)
	}
}

// Only requests that may be repeated, with a hedged method, are hedged.
func TestHedgeOnlyIdempotent(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		methods []string
		want    int32
	}{
		{"GET hedged", http.MethodGet, nil, 2},
		{"PUT not hedged by default", http.MethodPut, nil, 1},
		{"PUT hedged when listed", http.MethodPut, []string{http.MethodPut}, 2},
		{"POST never hedged without a key", http.MethodPost, []string{http.MethodPost}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := &lateBase{closed: make(chan string, 2)}
			tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{
				Hedge: newHedger(t, time.Millisecond), HedgeMethods: tc.methods,
				// Ends an unhedged primary, which waits for cancellation.
				AttemptTimeout: 20 * time.Millisecond, Retry: retry.Config{MaxAttempts: 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(context.Background(), tc.method, "http://example.invalid/", strings.NewReader("x"))
			do(tr, req)
			if got := base.calls.Load(); got != tc.want {
				t.Errorf("%d requests sent, want %d", got, tc.want)
			}
		})
	}
}
