package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// benchHandler answers 201 with a small JSON body.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"ch_1","amount":100}`))
})

// discard is a ResponseWriter that keeps nothing, so that what is
// measured is the middleware, not a recorder. It counts the 503s, which
// a benchmark of stored responses must not meet.
type discard struct{ h http.Header }

var unavailable atomic.Int64

func (d *discard) Header() http.Header { return d.h }
func (d *discard) WriteHeader(code int) {
	if code == http.StatusServiceUnavailable {
		unavailable.Add(1)
	}
}
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkMiddlewareMemory compares the bare handler with the middleware
// over the Memory store: NewKey claims, runs and completes a fresh key per
// request (the cost every first request pays); Replay answers from a
// completed record. The budget is 2 us/op of NewKey over Bare.
// cpu-ns/op is the process's CPU time per op (all cores, the collector
// included), which holds on a machine shared with other work where ns/op,
// wall time, does not.
func BenchmarkMiddlewareMemory(b *testing.B) {
	m, err := idempotency.New(idempotency.Config{})
	if err != nil {
		b.Fatal(err)
	}
	wrapped := m.Handler(benchHandler)
	body := `{"amount":100,"currency":"eur","source":"tok_visa"}`
	var seq atomic.Int64
	runs := 0
	run := func(b *testing.B, h http.Handler, key func() string) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		defer func() {
			if d := cpuTime() - cpu0; d > 0 {
				b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		}()
		b.RunParallel(func(pb *testing.PB) {
			w := &discard{h: make(http.Header)}
			r := httptest.NewRequest(http.MethodPost, "/charges", nil)
			rd := strings.NewReader(body)
			for pb.Next() {
				rd.Reset(body)
				r.Body = readCloser{rd}
				r.ContentLength = int64(len(body))
				if k := key(); k != "" {
					r.Header[idempotency.KeyHeader] = []string{k}
				}
				clear(w.h)
				h.ServeHTTP(w, r)
			}
		})
	}
	b.Run("Bare", func(b *testing.B) { run(b, benchHandler, func() string { return "" }) })
	b.Run("NewKey", func(b *testing.B) {
		// A store of its own, large enough for every key of the run.
		store, err := idempotency.NewMemory(idempotency.MemoryConfig{MaxBytes: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		nm, err := idempotency.New(idempotency.Config{Store: store})
		if err != nil {
			b.Fatal(err)
		}
		runs++                        // keys of this run's own: an earlier run's would replay
		keys := make([]string, b.N+1) // drawn before the clock starts
		for i := range keys {
			keys[i] = "k-" + strconv.Itoa(runs) + "-" + strconv.Itoa(i)
		}
		seq.Store(0)
		unavailable.Store(0)
		b.ResetTimer()
		run(b, nm.Handler(benchHandler), func() string { return keys[seq.Add(1)] })
		if n := unavailable.Load(); n > 0 {
			b.Fatalf("%d of %d requests were refused 503", n, b.N)
		}
	})
	b.Run("Replay", func(b *testing.B) { run(b, wrapped, func() string { return "k-replayed" }) })
	// Steady: NewKey against a store whose records expire as soon as
	// they complete, so that claims evict as many as they add: a
	// long-running server's state, where the maps no longer grow.
	b.Run("Steady", func(b *testing.B) {
		store, err := idempotency.NewMemory(idempotency.MemoryConfig{MaxBytes: 4 << 20})
		if err != nil {
			b.Fatal(err)
		}
		sm, err := idempotency.New(idempotency.Config{Store: store, TTL: time.Nanosecond, Lease: time.Nanosecond})
		if err != nil {
			b.Fatal(err)
		}
		h := sm.Handler(benchHandler)
		const warm = 50000
		keys := make([]string, warm+b.N+1)
		for i := range keys {
			keys[i] = "s-" + strconv.Itoa(i)
		}
		var i atomic.Int64
		w := &discard{h: make(http.Header)}
		for range warm {
			r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(body))
			r.Header.Set(idempotency.KeyHeader, keys[i.Add(1)])
			h.ServeHTTP(w, r)
		}
		unavailable.Store(0)
		b.ResetTimer()
		run(b, h, func() string { return keys[i.Add(1)] })
		if n := unavailable.Load(); n > 0 {
			b.Fatalf("%d of %d requests were refused 503", n, b.N)
		}
	})
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
