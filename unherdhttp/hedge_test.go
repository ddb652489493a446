package unherdhttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/hedgetest"
	"github.com/unherd/unherd/internal/tally"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// newHedger returns a Hedger that always hedges after delay.
func newHedger(t *testing.T, delay time.Duration) *hedge.Hedger {
	return hedgetest.Always(t, delay)
}

// A GET whose primary hangs is answered by its hedge, which carries the
// attempt header; the primary is cancelled. The hedge answers only once the
// primary has reached the server: on a loaded machine the hedge delay can
// pass before the primary's connection is accepted, and a primary
// cancelled before it arrived would never be seen ending.
func TestHedgeWins(t *testing.T) {
	var mu sync.Mutex
	var attempts []string
	primaryArrived := make(chan struct{})
	primaryCancelled := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get(unherdhttp.AttemptHeader)
		mu.Lock()
		attempts = append(attempts, a)
		mu.Unlock()
		if a == "" {
			close(primaryArrived)
			if await.Within(r.Context().Done()) {
				close(primaryCancelled)
			} else { // the test's wait for primaryCancelled fails too
				t.Errorf("the primary's handler waited %v for its request to be cancelled", await.Timeout)
			}
			return
		}
		select {
		case <-primaryArrived:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "hedge "+a)
	})
	tr := newTransport(t, unherdhttp.Config{Hedge: newHedger(t, 5*time.Millisecond), Retry: fast})
	status, body, err := get(t, tr, srv.URL)
	if err != nil || status != 200 || body != "hedge 2" {
		t.Fatalf("got %d %q, %v; want 200 %q", status, body, err, "hedge 2")
	}
	await.Recv(t, primaryCancelled, "the server to see the primary's request cancelled")
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(attempts) // the hedge may reach the server first
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
	closed := func() string { return await.Recv(t, base.closed, "the primary's and the hedge's bodies to be closed") }
	got := []string{closed(), closed()}
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
				Hedge: newHedger(t, time.Millisecond), HedgeMethod: methods(tc.methods),
				// Ends an unhedged primary, which waits for cancellation.
				Retry: retry.Config{AttemptTimeout: 20 * time.Millisecond, MaxAttempts: 1},
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

// step is what raceBase does with one request: after a delay, it answers
// with status (body "primary" or "hedge") or fails with err.
type step struct {
	after  time.Duration
	status int
	err    error
}

// raceBase is an in-process base transport for hedging races under
// synctest: the primary (no attempt header) follows primary, every hedge
// follows hedge. A request whose context ends first fails with the
// context's error. It counts the requests, and the response bodies it
// hands out and that get closed.
type raceBase struct {
	primary, hedge step
	calls          atomic.Int32
	opened, closed atomic.Int32
}

func (b *raceBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.calls.Add(1)
	s, name := b.hedge, "hedge"
	if r.Header.Get(unherdhttp.AttemptHeader) == "" {
		s, name = b.primary, "primary"
	}
	tm := time.NewTimer(s.after)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	b.opened.Add(1)
	return &http.Response{StatusCode: s.status, Request: r, Header: http.Header{},
		Body: &countedBody{Reader: strings.NewReader(name), closed: &b.closed}}, nil
}

// countedBody is a response body that counts its closes in closed.
type countedBody struct {
	io.Reader
	closed *atomic.Int32
}

func (c *countedBody) Close() error { c.closed.Add(1); return nil }

// refused is the error of a dial to a closed port.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// Within a hedged attempt only a response the Transport would hand back
// wins: a fast 503 or a refused connection from the hedge does not cancel
// a primary about to answer 200, and a failure waits for the request
// still running. When every request fails, the last failure goes back
// (here as the response, the policy having a single attempt). Every body
// that does not go back to the caller is closed.
func TestHedgeFailureDoesNotWin(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name           string
		primary, hedge step
		wantCalls      int32
		wantStatus     int
		wantBody       string
		wantErr        error
		wantElapsed    time.Duration
	}{
		{"hedge 503 at once, primary 200 at 50ms", step{after: 50 * ms, status: 200}, step{status: 503}, 2, 200, "primary", nil, 50 * ms},
		{"hedge 429 at once, primary 200 at 50ms", step{after: 50 * ms, status: 200}, step{status: 429}, 2, 200, "primary", nil, 50 * ms},
		{"hedge 500 at once, primary 200 at 50ms", step{after: 50 * ms, status: 200}, step{status: 500}, 2, 200, "primary", nil, 50 * ms},
		{"hedge refused, primary 200 at 50ms", step{after: 50 * ms, status: 200}, step{err: refused}, 2, 200, "primary", nil, 50 * ms},
		{"primary 200 and hedge 503 at the same instant", step{after: 50 * ms, status: 200}, step{after: 40 * ms, status: 503}, 2, 200, "primary", nil, 50 * ms},
		{"hedge 200 and primary 503 at the same instant", step{after: 50 * ms, status: 503}, step{after: 40 * ms, status: 200}, 2, 200, "hedge", nil, 50 * ms},
		{"primary 503 at 20ms waits for hedge 200 at 40ms", step{after: 20 * ms, status: 503}, step{after: 30 * ms, status: 200}, 2, 200, "hedge", nil, 40 * ms},
		{"hedge refused, primary 503 at 50ms: the 503 goes back", step{after: 50 * ms, status: 503}, step{err: refused}, 2, 503, "primary", nil, 50 * ms},
		{"hedge 503 at 30ms, primary refused at 50ms: the error goes back", step{after: 50 * ms, err: refused}, step{after: 20 * ms, status: 503}, 2, 0, "", syscall.ECONNREFUSED, 50 * ms},
		{"primary 503 before the hedge delay: no hedge", step{after: 5 * ms, status: 503}, step{status: 200}, 1, 503, "primary", nil, 5 * ms},
		{"hedge 200 wins over a hanging primary", step{after: time.Hour, status: 200}, step{status: 200}, 2, 200, "hedge", nil, 10 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &raceBase{primary: tc.primary, hedge: tc.hedge}
				tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{
					Hedge: newHedger(t, 10*ms), Retry: retry.Config{MaxAttempts: 1},
				})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				status, body, err := get(t, tr, "http://example.invalid/")
				if elapsed := time.Since(start); elapsed != tc.wantElapsed {
					t.Errorf("took %v, want %v", elapsed, tc.wantElapsed)
				}
				if status != tc.wantStatus || body != tc.wantBody || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Errorf("got %d %q, %v; want %d %q, %v", status, body, err, tc.wantStatus, tc.wantBody, tc.wantErr)
				}
				synctest.Wait() // losing requests have returned
				if got := base.calls.Load(); got != tc.wantCalls {
					t.Errorf("%d requests sent, want %d", got, tc.wantCalls)
				}
				if opened, closed := base.opened.Load(), base.closed.Load(); opened != closed {
					t.Errorf("%d response bodies handed out, %d closed", opened, closed)
				}
			})
		})
	}
}

// Over loopback, through net/http's Transport: a hedge answered 503
// before the primary answers at all, and the caller gets the primary's
// 200. Which answer the client reads first is up to the scheduler here;
// TestHedgeFailureDoesNotWin pins the order under synctest.
func TestHedgeLoopback503ThenPrimary200(t *testing.T) {
	hedgeAnswered := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(unherdhttp.AttemptHeader) != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "hedge")
			w.(http.Flusher).Flush()
			close(hedgeAnswered)
			return
		}
		select {
		case <-hedgeAnswered:
			io.WriteString(w, "primary")
		case <-r.Context().Done():
		}
	})
	tr := newTransport(t, unherdhttp.Config{
		Hedge: newHedger(t, time.Millisecond), Retry: retry.Config{MaxAttempts: 1},
	})
	status, body, err := get(t, tr, srv.URL)
	if err != nil || status != 200 || body != "primary" {
		t.Fatalf("got %d %q, %v; want 200 primary", status, body, err)
	}
}

// With a hedger whose NonFatal calls every error non-fatal, the attempt's
// last failure starts the next hedge at once, as package hedge does; the
// failed response is closed all the same.
func TestHedgeNonFatalStartsNextHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := hedge.New(hedge.Config{Delay: 10 * time.Millisecond, Budget: budget.Unlimited, MinWinShare: -1,
			NonFatal: func(error) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		base := &raceBase{primary: step{after: 5 * time.Millisecond, status: 503}, hedge: step{after: time.Millisecond, status: 200}}
		tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{Hedge: h, Retry: retry.Config{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		status, body, err := get(t, tr, "http://example.invalid/")
		if err != nil || status != 200 || body != "hedge" || time.Since(start) != 6*time.Millisecond {
			t.Errorf("got %d %q, %v after %v; want 200 hedge after 6ms", status, body, err, time.Since(start))
		}
		synctest.Wait()
		if opened, closed := base.opened.Load(), base.closed.Load(); opened != 2 || closed != 2 {
			t.Errorf("%d response bodies handed out, %d closed; want 2 and 2", opened, closed)
		}
	})
}

// A failed response is not a latency sample for the hedger's adaptive
// delay: after many fast 503s the hedger still knows no latency and
// hedges after its MaxDelay, not after the 503s' near-zero latency.
func TestHedgeFailuresNotObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxDelay = 50 * time.Millisecond
		h, err := hedge.New(hedge.Config{MaxDelay: maxDelay, Budget: budget.Unlimited, MinWinShare: -1})
		if err != nil {
			t.Fatal(err)
		}
		base := &raceBase{primary: step{after: time.Millisecond, status: 503}}
		tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{Hedge: h, Retry: retry.Config{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for range 500 { // more than the 200 latencies a p95 needs
			if status, _, err := get(t, tr, "http://example.invalid/"); err != nil || status != 503 {
				t.Fatalf("got %d, %v; want 503", status, err)
			}
		}
		if d, ok := h.Delay(); !ok || d != maxDelay {
			t.Errorf("hedge delay %v, %v; want MaxDelay %v: no latency known", d, ok, maxDelay)
		}
	})
}

// seenRequest is what keyBase recorded of one request.
type seenRequest struct {
	Attempt, Key, XKey, Body string
}

// keyBase is an in-process base transport that records the attempt
// header, the idempotency-key headers and the body of every request, and
// answers by the attempt header: the first request (none) with 503 after
// 50ms, the second (the hedge) with 503 at once, and any later one with
// 200 at once.
type keyBase struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (b *keyBase) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	a := r.Header.Get(unherdhttp.AttemptHeader)
	b.mu.Lock()
	b.seen = append(b.seen, seenRequest{a, r.Header.Get(idempotency.KeyHeader), r.Header.Get("X-Idempotency-Key"), string(body)})
	b.mu.Unlock()
	status := http.StatusOK
	switch a {
	case "":
		tm := time.NewTimer(50 * time.Millisecond)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		status = http.StatusServiceUnavailable
	case "2":
		status = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: status, Request: r, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(a))}, nil
}

// With AutoIdempotencyKey and POST or PATCH among the hedged methods, a
// request whose hedge fires carries one idempotency key on the primary, on
// the hedge, and on the retry that follows when both fail: the server sees
// three copies of one logical request, and can apply it once. A key the
// caller set, in either header, is sent as it is and no other is added.
func TestHedgeSharesIdempotencyKey(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		header, key string // a key the caller sets, if any
	}{
		{"POST gets one automatic key", http.MethodPost, "", ""},
		{"PATCH gets one automatic key", http.MethodPatch, "", ""},
		{"POST keeps the caller's Idempotency-Key", http.MethodPost, idempotency.KeyHeader, "k-1"},
		{"POST keeps the caller's X-Idempotency-Key", http.MethodPost, "X-Idempotency-Key", "x-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &keyBase{}
				tr, err := unherdhttp.NewTransport(base, unherdhttp.Config{
					Hedge: newHedger(t, 10*time.Millisecond), HedgeMethod: methods([]string{http.MethodPost, http.MethodPatch}),
					AutoIdempotencyKey: true, Retry: fast,
				})
				if err != nil {
					t.Fatal(err)
				}
				req, _ := http.NewRequest(tc.method, "http://example.invalid/", strings.NewReader("payload"))
				if tc.header != "" {
					req.Header.Set(tc.header, tc.key)
				}
				status, body, err := do(tr, req)
				if err != nil || status != 200 || body != "3" {
					t.Fatalf("got %d %q, %v; want 200 from the third request", status, body, err)
				}
				synctest.Wait()
				base.mu.Lock()
				defer base.mu.Unlock()
				if len(base.seen) != 3 {
					t.Fatalf("server saw %+v, want the primary, its hedge and a retry", base.seen)
				}
				var key, xkey string
				switch tc.header {
				case "":
					key = base.seen[0].Key
					if len(key) != 38 {
						t.Errorf("automatic key %q is not a UUID", key)
					}
				case idempotency.KeyHeader:
					key = tc.key
				default:
					xkey = tc.key
				}
				want := []seenRequest{{"", key, xkey, "payload"}, {"2", key, xkey, "payload"}, {"3", key, xkey, "payload"}}
				if diff := cmp.Diff(want, base.seen); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// methods is a Config.HedgeMethod that accepts the methods in ms; nil for
// a nil ms, the default.
func methods(ms []string) func(string) bool {
	if ms == nil {
		return nil
	}
	return func(m string) bool { return slices.Contains(ms, m) }
}

// signalBudget is a tally.Budget that signals each record on recorded.
type signalBudget struct {
	*tally.Budget
	recorded chan struct{}
}

func (b signalBudget) Record(a budget.Attempt) {
	b.Budget.Record(a)
	b.recorded <- struct{}{}
}

// A hedge is a copy of the attempt that the retry policy keeps the books
// of: the policy's budget pays for it and records it with the attempt,
// and a budget that refuses it keeps it from being sent.
func TestHedgePaidByRetryBudget(t *testing.T) {
	t.Run("the budget pays", func(t *testing.T) {
		hedgePaidByRetryBudget(t, -1, "hedge 2", 2, []budget.Attempt{{N: 1}, {N: 2, Charged: failure.Transient}})
	})
	t.Run("the budget refuses", func(t *testing.T) {
		hedgePaidByRetryBudget(t, 0, "primary", 1, []budget.Attempt{{N: 1}})
	})
}

// hedgePaidByRetryBudget sends a GET whose primary answers after 200 ms
// and whose hedges answer at once, through a Transport whose retry budget
// allows allow hedges (all if negative), and checks the body, the
// requests the server saw and what the budget recorded.
func hedgePaidByRetryBudget(t *testing.T, allow int, wantBody string, requests int32, records []budget.Attempt) {
	var sent atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		if a := r.Header.Get(unherdhttp.AttemptHeader); a != "" {
			io.WriteString(w, "hedge "+a)
			return
		}
		select {
		case <-time.After(200 * time.Millisecond):
			io.WriteString(w, "primary")
		case <-r.Context().Done():
		}
	})
	b := signalBudget{&tally.Budget{Allow: allow}, make(chan struct{}, 4)}
	rc := fast
	rc.Budget = b
	tr := newTransport(t, unherdhttp.Config{Hedge: newHedger(t, 5*time.Millisecond), Retry: rc})
	status, body, err := get(t, tr, srv.URL)
	if err != nil || status != 200 || body != wantBody {
		t.Fatalf("got %d %q, %v; want 200 %q", status, body, err, wantBody)
	}
	if got := sent.Load(); got != requests {
		t.Errorf("the server saw %d requests, want %d", got, requests)
	}
	// A hedge is recorded as it ends, on its own goroutine, which may be
	// after the transport returned.
	for range records {
		await.Recv(t, b.recorded, "the retry budget to hear of every request")
	}
	c := b.Counts()
	if c.Withdrawn != int(requests)-1 {
		t.Errorf("the retry budget paid for %d hedges, want %d", c.Withdrawn, requests-1)
	}
	slices.SortFunc(c.Records, func(x, y budget.Attempt) int { return x.N - y.N })
	if diff := cmp.Diff(records, c.Records); diff != "" {
		t.Errorf("the retry budget's records (-want +got):\n%s", diff)
	}
}
