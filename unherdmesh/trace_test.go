package unherdmesh

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/unherdhttp"
)

// A trace is the sequence of outcomes a dependency gives one request's
// attempts: a status ("503"), "reset" (the connection closes after the
// request arrived, with no response), "refused" (the connection cannot
// be made) or "timeout" (no response before the attempt timeout). After
// the trace, every attempt gets 200.
type trace []string

// tracedServer answers attempts per a trace: a loopback server for the
// statuses, resets and timeouts, and a dialer that refuses for
// "refused". It counts the attempts.
type tracedServer struct {
	mu       sync.Mutex
	trace    trace
	attempts int
	srv      *httptest.Server
}

// next returns the outcome of the next attempt; when refusedOnly it
// takes it only if it is "refused".
func (s *tracedServer) next(refusedOnly bool) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := "200"
	if s.attempts < len(s.trace) {
		o = s.trace[s.attempts]
	}
	if refusedOnly && o != "refused" {
		return o, false
	}
	s.attempts++
	return o, true
}

func newTracedServer(t *testing.T, tr trace) *tracedServer {
	s := &tracedServer{trace: tr}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, _ := s.next(false)
		switch o {
		case "reset":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // a reset, not an orderly close
				}
				conn.Close()
			}
		case "timeout":
			awaitEnd(t, r, "timeout outcome: the client did not give up on the attempt")
		default:
			code, err := strconv.Atoi(o)
			if err != nil {
				t.Errorf("bad outcome %q", o)
				code = 599
			}
			w.WriteHeader(code)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// run sends one request of the method through a Transport built from cfg, with an
// immediate schedule (the trace checks the decisions, not the delays),
// and returns the number of attempts the server saw.
func (s *tracedServer) run(t *testing.T, cfg unherdhttp.Config, method string) int {
	t.Helper()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	base := &http.Transport{
		DisableKeepAlives: true, // every attempt dials, and net/http replays nothing itself
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if _, refused := s.next(true); refused {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			return dialer.DialContext(ctx, network, addr)
		},
	}
	defer base.CloseIdleConnections()
	cfg.Retry.Backoff = backoff.Schedule{Immediate: true}
	tr, err := unherdhttp.NewTransport(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, s.srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// documented walks a trace by a source's documented rule: retried says
// whether the rule retries an outcome, retries how many retries it
// allows. It returns the attempts made.
func documented(tr trace, retried func(o string) bool, retries int) int {
	for i := 0; ; i++ {
		o := "200"
		if i < len(tr) {
			o = tr[i]
		}
		if o == "200" || !retried(o) || i == retries {
			return i + 1
		}
	}
}

func isStatus(o string) (int, bool) {
	code, err := strconv.Atoi(o)
	return code, err == nil
}

// envoyDocumented is Envoy's rule for retry_on, as the router filter's
// documentation of x-envoy-retry-on states it: 5xx retries every 5xx and
// an upstream that does not respond at all (connection failure, reset,
// per-try timeout); gateway-error the same for 502, 503 and 504; reset a
// disconnect, reset or timeout; connect-failure a connection failure;
// retriable-status-codes the codes listed.
func envoyDocumented(conds []string, codes []int) func(string) bool {
	return func(o string) bool {
		code, status := isStatus(o)
		for _, c := range conds {
			switch c {
			case "5xx":
				if !status || code >= 500 {
					return true
				}
			case "gateway-error":
				if !status || code >= 502 && code <= 504 {
					return true
				}
			case "reset":
				if !status {
					return true
				}
			case "connect-failure":
				if o == "refused" {
					return true
				}
			case "retriable-4xx":
				if code == 409 {
					return true
				}
			case "retriable-status-codes":
				for _, rc := range codes {
					if status && code == rc {
						return true
					}
				}
			}
		}
		return false
	}
}

// gatewayDocumented is GEP-1731's rule: the codes listed, a connection
// that could not be made and a backend request timeout are retried; a
// reset after the request was sent is not, by default.
func gatewayDocumented(codes []int) func(string) bool {
	return func(o string) bool {
		switch o {
		case "refused", "timeout":
			return true
		case "reset":
			return false
		}
		code, _ := isStatus(o)
		for _, c := range codes {
			if c == code {
				return true
			}
		}
		return false
	}
}

// linkerdDocumented is the rule of Linkerd's retry.linkerd.io/http
// annotation: the statuses listed are retried (here "5xx,429").
func linkerdDocumented(o string) bool {
	code, ok := isStatus(o)
	return ok && (code >= 500 && code <= 599 || code == 429)
}

func TestTraceTable(t *testing.T) {
	type row struct {
		name   string
		parse  func() (unherdhttp.Config, error)
		rule   func(string) bool
		limit  int // retries the source allows
		trace  trace
		method string // "" for GET
		depart int    // if non-zero, the attempts unherd makes where it departs on purpose (see CONFORMANCE.md)
	}
	envoy := func(y string) func() (unherdhttp.Config, error) {
		return func() (unherdhttp.Config, error) { return ParseEnvoyRetryPolicy([]byte(y), nil) }
	}
	gateway := func(y string) func() (unherdhttp.Config, error) {
		return func() (unherdhttp.Config, error) { return ParseHTTPRouteRule([]byte(y), nil) }
	}
	linkerd := func() (unherdhttp.Config, error) {
		return ParseLinkerdAnnotations(map[string]string{
			"retry.linkerd.io/http": "5xx,429", "retry.linkerd.io/limit": "3", "retry.linkerd.io/timeout": "100ms",
		})
	}
	envoy5xx := "retry_on: 5xx\nnum_retries: 3\nper_try_timeout: 0.1s\n"
	envoyGW := "retry_on: gateway-error\nnum_retries: 2\nper_try_timeout: 0.1s\n"
	envoyCodes := "retry_on: connect-failure,retriable-status-codes\nretriable_status_codes: [503, 429]\nnum_retries: 2\nper_try_timeout: 0.1s\n"
	envoyReset := "retry_on: reset,retriable-4xx\nnum_retries: 2\nper_try_timeout: 0.1s\n"
	gw := "retry: {codes: [500, 502, 503, 504], attempts: 2}\ntimeouts: {backendRequest: 100ms}\n"
	rows := []row{
		{"Envoy5xx/503,503,200", envoy(envoy5xx), envoyDocumented([]string{"5xx"}, nil), 3, trace{"503", "503", "200"}, "", 0},
		{"Envoy5xx/exhausted", envoy(envoy5xx), envoyDocumented([]string{"5xx"}, nil), 3, trace{"500", "502", "503", "504", "500"}, "", 0},
		{"Envoy5xx/reset,refused,timeout", envoy(envoy5xx), envoyDocumented([]string{"5xx"}, nil), 3, trace{"reset", "refused", "timeout"}, "", 0},
		{"Envoy5xx/404 stops", envoy(envoy5xx), envoyDocumented([]string{"5xx"}, nil), 3, trace{"503", "404"}, "", 0},
		// Envoy retries a POST as it retries a GET; unherd repeats a POST
		// without an Idempotency-Key only when it never left.
		{"Envoy5xx/POST 503 (departure)", envoy(envoy5xx), envoyDocumented([]string{"5xx"}, nil), 3, trace{"503"}, http.MethodPost, 1},
		{"Envoy5xx/POST refused", envoy(envoy5xx), envoyDocumented([]string{"5xx"}, nil), 3, trace{"refused", "refused"}, http.MethodPost, 0},
		{"EnvoyGatewayError/500 stops", envoy(envoyGW), envoyDocumented([]string{"gateway-error"}, nil), 2, trace{"502", "500"}, "", 0},
		{"EnvoyGatewayError/504,timeout", envoy(envoyGW), envoyDocumented([]string{"gateway-error"}, nil), 2, trace{"504", "timeout"}, "", 0},
		{"EnvoyStatusCodes/429,refused,503", envoy(envoyCodes), envoyDocumented([]string{"connect-failure", "retriable-status-codes"}, []int{503, 429}), 2, trace{"429", "refused", "503"}, "", 0},
		{"EnvoyStatusCodes/reset stops", envoy(envoyCodes), envoyDocumented([]string{"connect-failure", "retriable-status-codes"}, []int{503, 429}), 2, trace{"503", "reset"}, "", 0},
		{"EnvoyStatusCodes/timeout stops", envoy(envoyCodes), envoyDocumented([]string{"connect-failure", "retriable-status-codes"}, []int{503, 429}), 2, trace{"timeout"}, "", 0},
		{"EnvoyReset4xx/409,reset,200", envoy(envoyReset), envoyDocumented([]string{"reset", "retriable-4xx"}, nil), 2, trace{"409", "reset"}, "", 0},
		{"EnvoyReset4xx/503 stops", envoy(envoyReset), envoyDocumented([]string{"reset", "retriable-4xx"}, nil), 2, trace{"503"}, "", 0},
		{"GEP1731/503,500,200", gateway(gw), gatewayDocumented([]int{500, 502, 503, 504}), 2, trace{"503", "500"}, "", 0},
		{"GEP1731/refused,timeout,503", gateway(gw), gatewayDocumented([]int{500, 502, 503, 504}), 2, trace{"refused", "timeout", "503"}, "", 0},
		{"GEP1731/reset stops", gateway(gw), gatewayDocumented([]int{500, 502, 503, 504}), 2, trace{"reset"}, "", 0},
		{"GEP1731/429 stops", gateway(gw), gatewayDocumented([]int{500, 502, 503, 504}), 2, trace{"429"}, "", 0},
		{"LinkerdAnnotations/429,503,500,200", linkerd, linkerdDocumented, 3, trace{"429", "503", "500"}, "", 0},
		{"LinkerdAnnotations/exhausted", linkerd, linkerdDocumented, 3, trace{"500", "500", "500", "500", "500"}, "", 0},
		{"LinkerdAnnotations/409 stops", linkerd, linkerdDocumented, 3, trace{"503", "409"}, "", 0},
		// Linkerd's annotations name statuses only; a timeout (the retry
		// timeout) is retried, as Linkerd's docs say, and so are
		// transport errors, by unherdhttp's rules: Linkerd 2.16 documents
		// "a retry timeout after which a request is cancelled and
		// retried".
		{"LinkerdAnnotations/timeout,200", linkerd, func(o string) bool { return o == "timeout" || linkerdDocumented(o) }, 3, trace{"timeout"}, "", 0},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			cfg, err := r.parse()
			if err != nil {
				t.Fatal(err)
			}
			doc := documented(r.trace, r.rule, r.limit)
			want := doc
			if r.depart != 0 {
				want = r.depart // a departure: doc is what the source does
			}
			s := newTracedServer(t, r.trace)
			got := s.run(t, cfg, cmp.Or(r.method, http.MethodGet))
			t.Logf("%s %v: %d attempts (documented rule: %d)", cmp.Or(r.method, http.MethodGet), r.trace, got, doc)
			if got != want {
				t.Errorf("trace %v: %d attempts, want %d (documented rule: %d)", r.trace, got, want, doc)
			}
		})
	}
}

// The ServiceProfile's routes through the same harness: a retryable
// route retries what its response classes call failures.
func TestTraceServiceProfile(t *testing.T) {
	sp, err := ParseServiceProfile([]byte(`
spec:
  routes:
  - name: GET /books
    condition: {method: GET, pathRegex: /.*}
    isRetryable: true
    responseClasses:
    - condition: {status: {min: 503}}
      isFailure: false
    - condition: {any: [{status: {min: 500, max: 599}}, {status: {min: 429}}]}
      isFailure: true
`))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://books/x", nil)
	rt, ok := sp.Route(req)
	if !ok {
		t.Fatal("no route")
	}
	// Linkerd's rule: the first class that matches decides; 503 is no
	// failure here, 429 and the other 5xx are; Linkerd retries as long as
	// the budget allows, unherd at most profileAttempts times in all.
	failed := func(o string) bool {
		code, _ := isStatus(o)
		if code == 503 {
			return false
		}
		return code >= 500 || code == 429
	}
	for _, tc := range []struct {
		trace  trace
		depart int
	}{
		{trace{"500", "429"}, 0},
		{trace{"502", "503"}, 0},
		{trace{"500", "500", "500", "500"}, profileAttempts}, // Linkerd: 5 attempts within the budget
	} {
		want := documented(tc.trace, failed, 1<<20)
		if tc.depart != 0 {
			want = tc.depart
		}
		s := newTracedServer(t, tc.trace)
		if got := s.run(t, rt.Config, http.MethodGet); got != want {
			t.Errorf("trace %v: %d attempts, want %d", tc.trace, got, want)
		}
	}
}

// The profile's Transport picks the route, retries by it, and bounds the
// request by the route's timeout.
func TestServiceProfileTransport(t *testing.T) {
	sp, err := ParseServiceProfile([]byte(`
spec:
  routes:
  - name: GET /retry
    condition: {method: GET, pathRegex: /retry}
    isRetryable: true
  - name: GET /slow
    condition: {method: GET, pathRegex: /slow}
    timeout: 100ms
`))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/slow":
			awaitEnd(t, r, "/slow: the route timeout did not end the request")
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := sp.Transport(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/retry", "/other"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		resp.Body.Close()
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/slow", nil)
	start := time.Now()
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Errorf("/slow: got %s, want the route timeout's error", resp.Status)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("/slow took %v, want about the route's 100ms", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["/retry"] != profileAttempts || seen["/other"] != 1 {
		t.Errorf("attempts: /retry %d (want %d), /other %d (want 1)", seen["/retry"], profileAttempts, seen["/other"])
	}
}

// awaitEnd waits, in a handler, for r's context to end, as the client's
// timeout should end it, and fails the test, saying that didn't happen,
// if it is still live after 5 s.
func awaitEnd(t *testing.T, r *http.Request, didnt string) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
		t.Errorf("%s within 5s", didnt)
	}
}
