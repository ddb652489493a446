package unherdpg_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/idempotency"
)

// A principal the database could not store as text (a NUL byte, invalid
// UTF-8) is protected like any other: the first request runs, its retry
// is replayed, and with FailOpen the handler is never run unprotected.
func TestHostilePrincipal(t *testing.T) {
	s, _ := newStore(t, newPool(t))
	for _, p := range []string{"a\x00b", "\xff\xfe", "\x00", "caf\xc3"} {
		t.Run(strings.ToValidUTF8(p, "?"), func(t *testing.T) {
			var runs atomic.Int32
			var errs []error
			m, err := idempotency.New(idempotency.Config{
				Store: s, FailOpen: true,
				Principal: func(*http.Request) string { return p },
				OnError:   func(_ *http.Request, err error) { errs = append(errs, err) },
			})
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.WriteHeader(http.StatusCreated)
			}))
			for i := range 2 {
				r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
				r.Header.Set(idempotency.KeyHeader, "k1")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					t.Fatalf("request %d: %d %s", i, w.Code, w.Body)
				}
				if replayed := w.Header().Get(idempotency.ReplayedHeader) == "true"; replayed != (i == 1) {
					t.Errorf("request %d: replayed %v, want %v", i, replayed, i == 1)
				}
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the handler ran %d times for one key and its retry, want 1", n)
			}
			if len(errs) > 0 {
				t.Errorf("store errors: %v", errs)
			}
			// The store itself takes the raw key too.
			if _, err := s.Claim(context.Background(), p+"\x00key", idempotency.Fingerprint{}, testLease); err != nil {
				t.Errorf("Claim of a key with NUL and invalid UTF-8: %v", err)
			}
		})
	}
}
