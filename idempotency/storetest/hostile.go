package storetest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/idempotency"
)

// Hostile runs an attacker's requests against the middleware on store,
// through real servers on loopback, as subtests of t:
//
//   - CrossPrincipal: a principal-scoped service and an unscoped one share
//     the store; keys crafted to spell the scoped service's stored key
//     (the principal's length, the principal, the victim's key) run
//     their own request instead of replaying the victim's response.
//   - StoredHeaders: cookies and credentials the handler set reach the
//     first caller but are neither stored nor replayed; a replay sets
//     the stored fields, replacing those an outer handler set.
//   - EscapedPath, QueryInPath: requests that differ only in how the
//     path is escaped, or in where the query begins, are 422 for a
//     reused key, never a replay.
//   - OtherName: a retry sent to another name of the service (another
//     Host) is the same request, and replays.
func Hostile(t *testing.T, store idempotency.Store) {
	t.Run("CrossPrincipal", func(t *testing.T) { crossPrincipal(t, store) })
	t.Run("StoredHeaders", func(t *testing.T) { storedHeaders(t, store) })
	for _, c := range []struct{ name, first, second string }{
		{"EscapedPath", "/pay%2F1", "/pay/1"},
		{"QueryInPath", "/x%3Fa=1", "/x?a=1?"},
	} {
		t.Run(c.name, func(t *testing.T) { differs(t, store, c.first, c.second) })
	}
	t.Run("OtherName", func(t *testing.T) { otherName(t, store) })
}

// otherName sends one request twice with one key, the second time to
// another name of the service; the second must replay the first.
func otherName(t *testing.T, store idempotency.Store) {
	var runs atomic.Int32
	srv := hostileServer(t, idempotency.Config{Store: store}, &runs)
	key := "other-name-" + random()
	a := post(t, srv, "/pay", "", "", key)
	if a.status != http.StatusCreated {
		t.Fatalf("first: %d %q", a.status, a.body)
	}
	b := post(t, srv, "/pay", "payments.other.test", "", key)
	if !b.replayed || b.status != a.status || b.body != a.body {
		t.Errorf("/pay (Host %q) after /pay with one key: %d replayed=%v %q; want a replay of %d %q", "payments.other.test", b.status, b.replayed, b.body, a.status, a.body)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// hostileServer serves the middleware cfg on store in front of a handler
// that counts its runs and answers who ran, and for which path.
func hostileServer(t *testing.T, cfg idempotency.Config, runs *atomic.Int32) string {
	t.Helper()
	m, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, r.Header.Get("X-User")+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery)
	})))
	t.Cleanup(srv.Close)
	return srv.URL
}

type hostileAnswer struct {
	status   int
	replayed bool
	body     string
	header   http.Header
}

// post sends a POST with key to base+path (the path sent as written) as
// user, with host as its Host when not empty.
func post(t *testing.T, base, path, host, user, key string) hostileAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader("100 EUR"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "service.test"
	if host != "" {
		req.Host = host
	}
	req.Header.Set(idempotency.KeyHeader, key)
	if user != "" {
		req.Header.Set("X-User", user)
	}
	//unherdvet:ignore notimeout a test harness against an httptest server; the test binary's deadline bounds it
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return hostileAnswer{resp.StatusCode, resp.Header.Get(idempotency.ReplayedHeader) == "true", string(b), resp.Header}
}

func crossPrincipal(t *testing.T, store idempotency.Store) {
	var scopedRuns, openRuns atomic.Int32
	scoped := hostileServer(t, idempotency.Config{Store: store, Principal: func(r *http.Request) string { return r.Header.Get("X-User") }}, &scopedRuns)
	open := hostileServer(t, idempotency.Config{Store: store}, &openRuns)
	victim := "xcc" + random()
	if a := post(t, scoped, "/charges", "", "alice", victim); a.status != http.StatusCreated || a.replayed {
		t.Fatalf("alice's own request: %d replayed=%v %q", a.status, a.replayed, a.body)
	}
	// The forms a stored key built from (principal, key) could take.
	for _, key := range []string{"5:alice" + victim, "p5:alice" + victim, "alice" + victim, "u" + victim, victim} {
		a := post(t, open, "/charges", "", "mallory", key)
		if a.replayed || strings.HasPrefix(a.body, "alice") {
			t.Errorf("unscoped key %q replayed alice's response %q", key, a.body)
		}
	}
	// And through the scoped service, as other principals.
	for _, p := range []struct{ user, key string }{{"alic", "e" + victim}, {"", "5:alice" + victim}, {"5:alice", victim}} {
		a := post(t, scoped, "/charges", "", p.user, p.key)
		if a.replayed || strings.HasPrefix(a.body, "alice") {
			t.Errorf("principal %q with key %q replayed alice's response %q", p.user, p.key, a.body)
		}
	}
	if n := scopedRuns.Load(); n != 4 {
		t.Errorf("the scoped handler ran %d times, want 4 (alice and three other principals)", n)
	}
	if n := openRuns.Load(); n != 5 {
		t.Errorf("the unscoped handler ran %d times, want 5 (each crafted key is a new request)", n)
	}
}

func storedHeaders(t *testing.T, store idempotency.Store) {
	m, err := idempotency.New(idempotency.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	inner := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Set-Cookie", "session=s3cret")
		h.Set("Authorization", "Bearer s3cret")
		h.Set("X-Auth-Token", "s3cret")
		h.Set("Location", "/charges/1")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":1}`)
	}))
	// An outer handler sets a Content-Type of its own before the
	// middleware runs, as a framework's default does.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	key := "hdr-" + random()
	first := post(t, srv.URL, "/charges", "", "", key)
	if first.status != http.StatusCreated || first.header.Get("Set-Cookie") == "" {
		t.Fatalf("first answer %d with Set-Cookie %q; want 201 with the handler's cookie", first.status, first.header.Get("Set-Cookie"))
	}
	again := post(t, srv.URL, "/charges", "", "", key)
	if !again.replayed {
		t.Fatalf("second answer %d %q not a replay", again.status, again.body)
	}
	for _, name := range []string{"Set-Cookie", "Authorization", "X-Auth-Token"} {
		if v := again.header.Values(name); len(v) > 0 {
			t.Errorf("replay carries %s %q: a secret was stored", name, v)
		}
	}
	if v := again.header.Values("Content-Type"); len(v) != 1 || v[0] != "application/json" {
		t.Errorf("replay's Content-Type %q, want the handler's one value", v)
	}
	if v := again.header.Get("Location"); v != "/charges/1" {
		t.Errorf("replay's Location %q, want the stored /charges/1", v)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// differs sends first and then second with one key; second must not
// replay first.
func differs(t *testing.T, store idempotency.Store, first, second string) {
	var runs atomic.Int32
	srv := hostileServer(t, idempotency.Config{Store: store}, &runs)
	key := "differs-" + random()
	a := post(t, srv, first, "", "", key)
	if a.status != http.StatusCreated {
		t.Fatalf("%s: %d %q", first, a.status, a.body)
	}
	b := post(t, srv, second, "", "", key)
	if b.replayed || b.status != http.StatusUnprocessableEntity {
		t.Errorf("%s after %s with one key: %d replayed=%v %q; want 422", second, first, b.status, b.replayed, b.body)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}
