package e2e_test

import (
	"bytes"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/toxitest"
)

// lostResponses runs next and then, for the requests lose picks, throws
// the finished response away and closes the connection: the client sees
// a dropped connection after the server did the work.
func lostResponses(next http.Handler, lose func(*http.Request) bool, lost *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !lose(r) {
			next.ServeHTTP(w, r)
			return
		}
		buf := &discardWriter{h: make(http.Header)}
		next.ServeHTTP(buf, r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		lost.Add(1)
		_ = conn.Close()
	})
}

type discardWriter struct {
	h    http.Header
	body bytes.Buffer
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(b []byte) (int, error) { return d.body.Write(b) }

// storeChaos adds latency to every store round trip and, every period,
// resets every connection through p for window. It stops when the
// returned function is called, and reports how many reset windows ran.
// Its ticker and sleeps are real time: the faults are Toxiproxy's, on
// loopback connections to a store in another process (PostgreSQL or
// Redis), and testing/synctest's fake clock does not reach that I/O.
func storeChaos(t *testing.T, p *toxitest.Proxy, period, window time.Duration) (stop func() int) {
	t.Helper()
	slow := p.Latency(t, 3*time.Millisecond, 2*time.Millisecond)
	done := make(chan struct{})
	var wg sync.WaitGroup
	resets := 0
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			heal := p.ResetPeer(t, 0)
			resets++
			time.Sleep(window)
			heal()
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		slow()
		return resets
	}
}
