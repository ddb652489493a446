package unherdhttp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/unherdhttp"
)

// bodyServer answers 503 to the first fails requests and 200 after, and
// records whether each request's body matched want in length and digest.
type bodyServer struct {
	want  [sha256.Size]byte
	size  int
	fails int
	mu    sync.Mutex
	seen  []bool
}

func (s *bodyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, err == nil && len(b) == s.size && sha256.Sum256(b) == s.want)
	hit := len(s.seen)
	s.mu.Unlock()
	if hit <= s.fails {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ok")
}

// opaque hides a reader's type, so http.NewRequest sets no GetBody.
type opaque struct{ io.Reader }

func TestRequestBodies(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		name       string
		size       int
		getBody    bool
		maxBuffer  int64
		wantHits   int
		wantStatus int
	}{
		{"1 MiB with GetBody is retried whole", MiB, true, 0, 3, 200},
		{"1 MiB without GetBody is sent once", MiB, false, 0, 1, 503},
		{"10 KiB without GetBody is buffered and retried", 10 << 10, false, 0, 3, 200},
		{"64 KiB exactly is buffered", 64 << 10, false, 0, 3, 200},
		{"64 KiB and one byte is sent once", 64<<10 + 1, false, 0, 1, 503},
		{"buffering disabled", 10, false, -1, 1, 503},
		// limit+1 must not overflow into a limit that reads nothing.
		{"MaxBufferedBody MaxInt64 buffers and retries", 10 << 10, false, math.MaxInt64, 3, 200},
		{"MaxBufferedBody MaxInt64-1 buffers and retries", 10 << 10, false, math.MaxInt64 - 1, 3, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := make([]byte, tc.size)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range payload {
				payload[i] = byte(rng.UintN(256))
			}
			bs := &bodyServer{want: sha256.Sum256(payload), size: tc.size, fails: 2}
			srv := newServer(t, bs.ServeHTTP)
			tr := newTransport(t, unherdhttp.Config{Retry: fast, MaxBufferedBody: tc.maxBuffer})
			var body io.Reader = bytes.NewReader(payload)
			if !tc.getBody {
				body = opaque{body}
			}
			req, _ := http.NewRequest(http.MethodPut, srv.URL, body)
			status, _, err := do(tr, req)
			if err != nil || status != tc.wantStatus {
				t.Fatalf("got %d, %v; want %d", status, err, tc.wantStatus)
			}
			bs.mu.Lock()
			defer bs.mu.Unlock()
			if len(bs.seen) != tc.wantHits {
				t.Errorf("server saw %d requests, want %d", len(bs.seen), tc.wantHits)
			}
			for i, ok := range bs.seen {
				if !ok {
					t.Errorf("request %d did not carry the full body", i+1)
				}
			}
		})
	}
}

// TestStalledDiscardedBody sends a GET to a server that answers 503 with
// a body it starts and never finishes. The Transport must not wait for
// the discarded bodies: it returns the last 503 long before the caller's
// deadline, with the request's context still live.
func TestStalledDiscardedBody(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		// Stall until the test ends; bounded, so that a Transport that
		// waits for the discarded body fails the test instead of hanging
		// it until its one-minute deadline.
		if !await.Within(release) {
			t.Errorf("the stalled handler waited %v for the test to end: the Transport is still reading a body it discarded", await.Timeout)
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	for _, cfg := range []struct {
		name string
		cfg  unherdhttp.Config
	}{
		{"no attempt timeout", unherdhttp.Config{Retry: fast}},
		{"attempt timeout", unherdhttp.Config{Retry: withAttemptTimeout(fast, time.Minute)}},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			hits.Store(0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			resp, err := newTransport(t, cfg.cfg).RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v, want the last 503", err)
			}
			resp.Body.Close()
			if ctx.Err() != nil {
				t.Errorf("the call outlived its deadline")
			}
			if resp.StatusCode != http.StatusServiceUnavailable || hits.Load() != 3 {
				t.Errorf("got %d after %d requests, want 503 after 3", resp.StatusCode, hits.Load())
			}
		})
	}
}
