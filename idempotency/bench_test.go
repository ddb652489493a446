package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/idempotency"
)

// benchHandler answers 201 with a small JSON body.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"ch_1","amount":100}`))
})

// discard is a ResponseWriter that keeps nothing, so that what is
// measured is the middleware, not a recorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkMiddlewareMemory compares the bare handler with the middleware
// over the Memory store: NewKey claims, runs and completes a fresh key per
// request (the cost every first request pays); Replay answers from a
// completed record. The budget is 2 us/op of NewKey over Bare.
func BenchmarkMiddlewareMemory(b *testing.B) {
	m, err := idempotency.New(idempotency.Config{})
	if err != nil {
		b.Fatal(err)
	}
	wrapped := m.Handler(benchHandler)
	body := `{"amount":100,"currency":"eur","source":"tok_visa"}`
	var seq atomic.Int64
	run := func(b *testing.B, h http.Handler, key func() string) {
		b.ReportAllocs()
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
		run(b, wrapped, func() string { return "k-" + strconv.FormatInt(seq.Add(1), 10) })
	})
	b.Run("Replay", func(b *testing.B) { run(b, wrapped, func() string { return "k-replayed" }) })
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
