package unherdhttp_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/shedtest"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/limit/limittest"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

func shed(t testing.TB, cfg unherdhttp.ShedConfig, h http.Handler) http.Handler {
	t.Helper()
	return configtest.Must(unherdhttp.Shed(cfg))(t)(h)
}

func TestShedRefusesOverLimit(t *testing.T) {
	l := shedtest.NoQueue(t, limit.Fixed(2))
	started, unblock := make(chan struct{}, 3), make(chan struct{})
	srv := newServer(t, shed(t, unherdhttp.ShedConfig{Limiter: l}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		if !await.Within(unblock) { // the test stopped before it unblocked the slow requests
			t.Errorf("a slow request's handler waited %v for the test to unblock it", await.Timeout)
		}
	})).ServeHTTP)
	defer srv.Client().CloseIdleConnections()
	statuses := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := srv.Client().Get(srv.URL)
			if err != nil {
				statuses <- -1
				return
			}
			_ = resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	await.Recv(t, started, "the first slow request to start")
	await.Recv(t, started, "the second slow request to start")

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "overloaded") {
		t.Errorf("third request: %d, Retry-After %q, body %q; want 503, Retry-After 1, overloaded", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if got := l.InFlight(); got != 2 {
		t.Errorf("in flight during the slow requests: %d, want 2", got)
	}
	close(unblock)
	for range 2 {
		if s := await.Recv(t, statuses, "a slow request's status"); s != http.StatusOK {
			t.Errorf("slow request: status %d, want 200", s)
		}
	}
	if len(started) != 0 {
		t.Error("the refused request ran the handler")
	}
	if got := l.InFlight(); got != 0 {
		t.Errorf("in flight after all requests: %d, want 0", got)
	}
}

func TestShedRefusalRetriedAfterRetryAfter(t *testing.T) {
	l, held := shedtest.Full(t)
	var mu sync.Mutex
	var arrivals []time.Time
	h := shed(t, unherdhttp.ShedConfig{Limiter: l}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
	b, err := budget.NewTokenBucket(budget.TokenBucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var events []observe.Event
	var tokens int64
	cfg := unherdhttp.Config{Retry: retry.Config{Budget: b, Observer: observe.On(observe.Retry, func(ev observe.Event) {
		events = append(events, ev)
		tokens = b.Tokens()
		held.Served(time.Now()) // room for the retry
	})}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	status, _, err := do(newTransport(t, cfg), req)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Fatalf("status %d, want 200 on the retry", status)
	}
	if len(events) != 1 || events[0].Class != failure.Throttled || events[0].Delay < time.Second {
		t.Fatalf("retries %+v; want one throttled retry after at least 1 s", events)
	}
	if tokens >= b.Capacity() {
		t.Errorf("budget during the wait: %d of %d tokens; want the retry paid for", tokens, b.Capacity())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) != 2 || arrivals[1].Sub(arrivals[0]) < time.Second {
		t.Errorf("arrivals %v; want 2, at least Retry-After (1 s) apart", arrivals)
	}
	if got := l.InFlight(); got != 0 {
		t.Errorf("in flight after all requests: %d, want 0", got)
	}
}

func TestShedPanicReleases(t *testing.T) {
	l := shedtest.NoQueue(t, limit.Fixed(1))
	srv := httptest.NewUnstartedServer(shed(t, unherdhttp.ShedConfig{Limiter: l}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("handler fails")
	})))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // net/http logs the recovered panic
	srv.Start()
	t.Cleanup(srv.Close)
	defer srv.Client().CloseIdleConnections()
	if resp, err := srv.Client().Get(srv.URL); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("status %d; want the connection closed by the panic", resp.StatusCode)
	}
	if got := l.InFlight(); got != 0 {
		t.Errorf("in flight after a panic: %d, want 0", got)
	}
	// The panic went on to net/http, and the token is free for the next.
	if _, ok := l.Acquire(time.Now()); !ok {
		t.Error("limiter still full after the panic")
	}
}

func TestShedPanicGoesOn(t *testing.T) {
	alg := &limittest.Recorder{N: 1}
	l := shedtest.NoQueue(t, alg)
	h := shed(t, unherdhttp.ShedConfig{Limiter: l}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	defer func() {
		if r := recover(); r != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", r)
		}
		shedtest.Released(t, l, alg, "") // Ignore
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	t.Error("the panic did not go on")
}

// TestShedDeadline runs the middleware in a bubble, with a recorder: how
// the caller's remaining time and the end of the request decide the
// answer, the handler's deadline and the limiter's sample.
func TestShedDeadline(t *testing.T) {
	tests := []struct {
		name       string
		header     string // TimeoutHeader value, "" for none
		cancelled  bool   // the client has gone before the request is served
		work       time.Duration
		goneAfter  time.Duration // the client goes away after this long, 0 for never
		wantStatus int
		wantRan    bool
		wantLeft   time.Duration // the handler's deadline from its start, 0 for none
		wantSample string        // "served", "dropped" or "" for none (Ignore)
	}{
		{name: "no header", work: time.Second, wantStatus: 200, wantRan: true, wantSample: "served"},
		{name: "within the deadline", header: "1500", work: time.Second, wantStatus: 200, wantRan: true, wantLeft: 1500 * time.Millisecond, wantSample: "served"},
		{name: "past the deadline", header: "50", work: time.Second, wantStatus: 200, wantRan: true, wantLeft: 50 * time.Millisecond, wantSample: "dropped"},
		{name: "already past", header: "0", wantStatus: 504},
		{name: "client already gone", cancelled: true, wantStatus: 504},
		{name: "client goes away", work: time.Second, goneAfter: 10 * time.Millisecond, wantStatus: 200, wantRan: true},
		{name: "invalid value ignored", header: "-5", work: time.Second, wantStatus: 200, wantRan: true, wantSample: "served"},
		{name: "huge value capped at a day", header: "99999999999999999999999", work: time.Second, wantStatus: 200, wantRan: true, wantLeft: 24 * time.Hour, wantSample: "served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				alg := &limittest.Recorder{N: 10}
				l := shedtest.NoQueue(t, alg)
				ran := false
				var left time.Duration
				h := shed(t, unherdhttp.ShedConfig{Limiter: l}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					ran = true
					if d, ok := r.Context().Deadline(); ok {
						left = time.Until(d)
					}
					// A handler that honours its context.
					select {
					case <-time.After(tt.work):
					case <-r.Context().Done():
					}
				}))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelled {
					cancel()
				}
				if tt.goneAfter > 0 {
					time.AfterFunc(tt.goneAfter, cancel)
				}
				req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
				if tt.header != "" {
					req.Header.Set(unherdhttp.TimeoutHeader, tt.header)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tt.wantStatus || ran != tt.wantRan || left != tt.wantLeft {
					t.Errorf("status %d, ran %v, deadline in %v; want %d, %v, %v", rec.Code, ran, left, tt.wantStatus, tt.wantRan, tt.wantLeft)
				}
				if got := rec.Header().Get("Retry-After"); got != "" {
					t.Errorf("Retry-After %q, want none", got)
				}
				shedtest.Released(t, l, alg, tt.wantSample)
			})
		})
	}
}

// TestShedServesNoCallerThatTimedOut sends requests through a Transport,
// with a deadline, to a handler that honours its context: the handler's
// deadline is never after the caller's.
func TestShedServesNoCallerThatTimedOut(t *testing.T) {
	type seen struct{ deadline, at time.Time }
	deadlines := make(chan seen, 1)
	srv := newServer(t, shed(t, unherdhttp.ShedConfig{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := r.Context().Deadline()
		deadlines <- seen{d, time.Now()}
		<-r.Context().Done()
		w.WriteHeader(http.StatusServiceUnavailable)
	})).ServeHTTP)
	client := &http.Client{Transport: newTransport(t, unherdhttp.Config{})}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	caller, _ := ctx.Deadline()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	sent := time.Now()
	if resp, err := client.Do(req); err == nil {
		_ = resp.Body.Close()
	}
	got := await.Recv(t, deadlines, "the handler's deadline")
	// The header carries the time left when the request was sent, so the
	// server's deadline may end later than the caller's by the request's
	// time in transit, and no more; on a loaded machine that is
	// milliseconds.
	transit := got.at.Sub(sent)
	if got.deadline.IsZero() || got.deadline.After(caller.Add(transit)) {
		t.Errorf("handler's deadline %v, caller's %v, request in transit up to %v; want one no later than the caller's plus the transit",
			got.deadline, caller, transit)
	}
}

func TestTransportSendsTimeoutHeader(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get(unherdhttp.TimeoutHeader))
		if len(got) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // retried
		}
	})
	tests := []struct {
		name     string
		deadline time.Duration
		attempt  time.Duration // Config.Retry.AttemptTimeout
		min, max int64         // the header's value on each attempt, -1 for none
	}{
		{name: "no deadline", min: -1, max: -1},
		{name: "caller's deadline", deadline: 5 * time.Second, min: 4000, max: 5000},
		{name: "attempt timeout", attempt: 3 * time.Second, min: 3000, max: 3000},
		{name: "attempt timeout within a shorter deadline", deadline: 2 * time.Second, attempt: 3 * time.Second, min: 1000, max: 2000},
		{name: "deadline within a shorter attempt timeout", deadline: 10 * time.Second, attempt: 3 * time.Second, min: 3000, max: 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			cfg := fast
			cfg.AttemptTimeout = tt.attempt
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if _, _, err := do(newTransport(t, unherdhttp.Config{Retry: cfg}), req); err != nil {
				t.Fatal(err)
			}
			if _, ok := req.Header[unherdhttp.TimeoutHeader]; ok {
				t.Error("the caller's request was modified")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 {
				t.Fatalf("%d attempts, want 2", len(got))
			}
			for i, v := range got {
				if tt.min < 0 {
					if v != "" {
						t.Errorf("attempt %d: header %q, want none", i+1, v)
					}
					continue
				}
				ms, err := strconvInt(v)
				if err != nil || ms < tt.min || ms > tt.max {
					t.Errorf("attempt %d: header %q, want %d to %d", i+1, v, tt.min, tt.max)
				}
			}
		})
	}
}

func strconvInt(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// serveAsync serves r through h in a goroutine and returns where its
// recorded response arrives.
func serveAsync(h http.Handler, r *http.Request) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		done <- w
	}()
	return done
}

func withPriority(p string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if p != "" {
		r.Header.Set(limit.PriorityHeader, p)
	}
	return r
}

// Lower priorities are refused first, and the share kept for critical
// requests admits one when normal ones are refused.
func TestShedPriorities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limit.New(limit.Config{Algorithm: limit.Fixed(4), CriticalShare: 0.25})
		if err != nil {
			t.Fatal(err)
		}
		unblock := make(chan struct{})
		h := shed(t, unherdhttp.ShedConfig{Limiter: l}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-unblock
		}))
		var admitted []<-chan *httptest.ResponseRecorder
		// One critical request (the reserve applies from the first one
		// on) and two normal ones: 3 of 4 in flight.
		for _, p := range []string{"critical", "", "normal"} {
			admitted = append(admitted, serveAsync(h, withPriority(p)))
			synctest.Wait()
		}
		if n := l.InFlight(); n != 3 {
			t.Fatalf("%d in flight, want 3", n)
		}
		for _, p := range []string{"normal", "sheddable", "SHEDDABLE", "bogus"} {
			w := <-serveAsync(h, withPriority(p))
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
				t.Errorf("a %q request over the normal share: %d, Retry-After %q; want 503 with Retry-After", p, w.Code, w.Header().Get("Retry-After"))
			}
		}
		admitted = append(admitted, serveAsync(h, withPriority("critical")))
		synctest.Wait()
		if n := l.InFlight(); n != 4 {
			t.Errorf("the critical request was not admitted into the reserve: %d in flight, want 4", n)
		}
		close(unblock)
		for _, done := range admitted {
			if w := <-done; w.Code != http.StatusOK {
				t.Errorf("an admitted request: %d, want 200", w.Code)
			}
		}
		if n := l.InFlight(); n != 0 {
			t.Errorf("%d in flight at the end, want 0", n)
		}
	})
}

// A request waiting in the limiter's queue leaves it when its caller's
// deadline passes (504, its handler never runs); one whose caller still
// waits gets the slot released before it.
func TestShedQueueHonoursDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A queue of 2 whose waiters may wait a second: CoDel's interval
		// bounds a wait too, so it is a second here.
		l, err := limit.New(limit.Config{Algorithm: limit.Fixed(1), MaxWait: time.Second, MaxWaiters: 2, CongestionInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		unblock := make(chan struct{})
		var mu sync.Mutex
		ran := map[string]bool{}
		h := shed(t, unherdhttp.ShedConfig{Limiter: l}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			ran[r.URL.Path] = true
			mu.Unlock()
			if r.URL.Path == "/first" {
				<-unblock
			}
		}))
		first := serveAsync(h, httptest.NewRequest(http.MethodGet, "/first", nil))
		synctest.Wait()
		late := httptest.NewRequest(http.MethodGet, "/late", nil)
		late.Header.Set(unherdhttp.TimeoutHeader, "200")
		start := time.Now()
		lateDone := serveAsync(h, late)
		synctest.Wait()
		patientDone := serveAsync(h, httptest.NewRequest(http.MethodGet, "/patient", nil))
		synctest.Wait()
		w := <-lateDone
		if w.Code != http.StatusGatewayTimeout || time.Since(start) != 200*time.Millisecond {
			t.Errorf("a queued request whose caller's deadline passed: %d after %v, want 504 after 200ms", w.Code, time.Since(start))
		}
		time.Sleep(300 * time.Millisecond)
		close(unblock)
		if w := <-first; w.Code != http.StatusOK {
			t.Errorf("first: %d", w.Code)
		}
		if w := <-patientDone; w.Code != http.StatusOK {
			t.Errorf("the patient request: %d, want 200 once the first released its slot", w.Code)
		}
		mu.Lock()
		defer mu.Unlock()
		if ran["/late"] || !ran["/patient"] {
			t.Errorf("handlers run: %v; want /first and /patient, never /late", ran)
		}
	})
}

// A priority on the caller's context travels in the priority header,
// unless the request names one itself; a normal one sends none.
func TestTransportSendsPriority(t *testing.T) {
	got := make(chan string, 3)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(limit.PriorityHeader)
	})
	tr := newTransport(t, unherdhttp.Config{})
	for _, tc := range []struct {
		ctx    context.Context
		header string
		want   string
	}{
		{limit.WithPriority(context.Background(), limit.Critical), "", "critical"},
		{limit.WithPriority(context.Background(), limit.Critical), "sheddable", "sheddable"},
		{context.Background(), "", ""},
	} {
		req, _ := http.NewRequestWithContext(tc.ctx, http.MethodGet, srv.URL, nil)
		if tc.header != "" {
			req.Header.Set(limit.PriorityHeader, tc.header)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if h := await.Recv(t, got, "the server to see the request"); h != tc.want {
			t.Errorf("priority header %q, want %q", h, tc.want)
		}
		if tc.header == "" && req.Header.Get(limit.PriorityHeader) != "" {
			t.Error("the Transport modified the caller's request")
		}
	}
}
