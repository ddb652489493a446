package unherdhttp_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// go-retryablehttp pull request 296 (issue 295, and 283 for its
// DefaultBackoff): a 429 or 503 with a large Retry-After (3600, or an
// HTTP-date a day ahead) stalled the client for that long, whatever its
// RetryWaitMax. Here, on a real loopback server, such an answer is
// returned at once, after one request; with ClampServerDelay the retry
// waits MaxServerDelay, not the server's hour.
func TestGoRetryablehttpPR296(t *testing.T) {
	for _, ra := range []string{"3600", time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(http.StatusText(status)+" Retry-After "+ra, func(t *testing.T) {
				var hits atomic.Int32
				srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
					if hits.Add(1) == 1 {
						w.Header().Set("Retry-After", ra)
						w.WriteHeader(status)
						return
					}
					w.WriteHeader(http.StatusOK)
				})
				tr := newTransport(t, unherdhttp.Config{})
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				start := time.Now()
				code, _, err := do(tr, req)
				if err != nil || code != status || hits.Load() != 1 {
					t.Fatalf("got %d, %v after %d requests; want %d at once, not retried", code, err, hits.Load(), status)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("the call took %v, want the answer back at once", d)
				}

				hits.Store(0)
				clamped := newTransport(t, unherdhttp.Config{Retry: retry.Config{ClampServerDelay: true, MaxServerDelay: 100 * time.Millisecond}})
				req, _ = http.NewRequest(http.MethodGet, srv.URL, nil)
				start = time.Now()
				code, _, err = do(clamped, req)
				d := time.Since(start)
				if err != nil || code != http.StatusOK || hits.Load() != 2 {
					t.Fatalf("clamped: got %d, %v after %d requests; want 200 on the retry", code, err, hits.Load())
				}
				if d < 100*time.Millisecond || d > 5*time.Second {
					t.Errorf("clamped: the call took %v, want MaxServerDelay (100ms) and a little more", d)
				}
			})
		}
	}
}
