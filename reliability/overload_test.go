//go:build reliability

package reliability

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/unherd/unherd/internal/overload"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/unherdhttp"
)

// protection is what stands between the network and the work server's
// handler: server middleware that may refuse a request before it takes a
// place in the queue. nil means none.
type protection func(http.Handler) http.Handler

// protections are the rows of TestOverload: two baselines, and
// unherdhttp's shedding middleware over the baseline handler (which does
// not honour its context: the protection must not need the handler's
// help), with an adaptive limiter at its defaults, priorities from the
// limit.PriorityHeader the callers set, and the caller's remaining
// deadline, which unherdhttp's Transport sends, on the handler's context.
var protections = []overload.Row{
	{Name: "none", Start: overHTTP(noProtection)},
	{Name: "none, handler honours ctx", HonoursContext: true, Start: overHTTP(noProtection)},
	{Name: "unherdhttp.Shed", Judged: true, Start: overHTTP(shedding)},
}

func noProtection(*testing.T) (protection, func() string) { return nil, nil }

// shedding is unherdhttp.Shed over a limit.Limiter with its defaults.
func shedding(t *testing.T) (protection, func() string) {
	l, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := unherdhttp.Shed(unherdhttp.ShedConfig{Limiter: l})
	if err != nil {
		t.Fatal(err)
	}
	return p, overload.LimiterState(l)
}

// overHTTP is a row's Start for HTTP: the work server's handler behind
// the protection newProtection builds, on a loopback httptest.Server, and
// callers that GET it through unherd's default Transport, the critical
// ones with limit.PriorityHeader "critical". A call succeeds with a 200
// and its whole body.
func overHTTP(newProtection func(*testing.T) (protection, func() string)) func(*testing.T, *overload.Server) (overload.Caller, func() string) {
	return func(t *testing.T, s *overload.Server) (overload.Caller, func() string) {
		p, state := newProtection(t)
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.Serve(r.Context()) {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		})
		if p != nil {
			h = p(h)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.CloseIdleConnections)
		do := func(ctx context.Context, critical bool) bool {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if critical {
				req.Header.Set(limit.PriorityHeader, limit.Critical.String())
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return false
			}
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return err == nil && resp.StatusCode == http.StatusOK
		}
		return do, state
	}
}

// TestOverload runs the overload (see the package doc) over HTTP
// for every protection, with the harness of internal/overload: it logs a
// table of what each phase measured (appended to
// $UNHERD_RELIABILITY_REPORT, if set) and checks the judged rows.
func TestOverload(t *testing.T) {
	table := overload.Run(t, overload.ScaleFromEnv(), seed, protections)
	if path := os.Getenv("UNHERD_RELIABILITY_REPORT"); path != "" {
		report(t, path, "overload", table)
	}
}
