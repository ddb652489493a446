package e2e_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
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

// newToxiproxy starts an in-process Toxiproxy in front of upstream and
// returns it; its Listen field is the address to dial.
func newToxiproxy(t *testing.T, name, upstream string) *toxiproxy.Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func addToxic(t *testing.T, p *toxiproxy.Proxy, json string) {
	t.Helper()
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(json)); err != nil {
		t.Fatal(err)
	}
}

// storeChaos adds latency to every store round trip and, every period,
// resets every connection through p for window. It stops when the
// returned function is called, and reports how many reset windows ran.
func storeChaos(t *testing.T, p *toxiproxy.Proxy, period, window time.Duration) (stop func() int) {
	t.Helper()
	addToxic(t, p, `{"name":"latency","type":"latency","stream":"downstream","attributes":{"latency":3,"jitter":2}}`)
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
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(`{"name":"reset","type":"reset_peer","stream":"upstream","attributes":{"timeout":0}}`)); err != nil {
				t.Error(err)
				return
			}
			resets++
			time.Sleep(window)
			if err := p.Toxics.RemoveToxic(t.Context(), "reset"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		p.Toxics.ResetToxics(t.Context())
		return resets
	}
}
