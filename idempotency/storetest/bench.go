package storetest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/idempotency"
)

// BenchmarkNewKeys measures a first request with a new key (a claim and
// a completion) through the middleware on s, from parallel goroutines.
func BenchmarkNewKeys(b *testing.B, s idempotency.Store) {
	m, err := idempotency.New(idempotency.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	prefix := "bench-" + random() + "-"
	var seq atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
			r.Header.Set(idempotency.KeyHeader, prefix+strconv.FormatInt(seq.Add(1), 10))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				b.Fatalf("status %d", w.Code)
			}
		}
	})
}
