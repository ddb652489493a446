// Package toxitest runs Toxiproxy (https://github.com/Shopify/toxiproxy)
// in-process, for tests of a service and the store, queue or service it
// talks to over TCP: put a [Proxy] between them, point the service at
// Proxy.Addr, and switch faults on and off from the test. No toxiproxy
// server or CLI is needed; the proxy stops when the test ends.
//
//	p := toxitest.New(t, "127.0.0.1:6379") // Redis
//	client := redis.NewClient(&redis.Options{Addr: p.Addr})
//	undo := p.Latency(t, 50*time.Millisecond, 10*time.Millisecond)
//	// ... the store is slow
//	undo()
//	up := p.Down(t) // connections are refused
//	// ... the store is gone
//	up()
//
// Every fault method returns the function that removes it; faults still
// in place when the test ends are removed with the proxy. Each applies to
// new and open connections alike, as Toxiproxy's toxics do.
package toxitest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy is an in-process Toxiproxy proxy in front of one upstream
// address. Its methods may be called from the test's goroutine and from
// others.
type Proxy struct {
	// Addr is the address to dial instead of the upstream's
	// (127.0.0.1 and a free port).
	Addr string

	p *toxiproxy.Proxy
	n atomic.Int64 // names the toxics
}

// New starts a proxy listening on a free loopback port and forwarding to
// upstream; it stops when the test ends.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "toxitest", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("toxitest: start proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{Addr: p.Listen, p: p}
}

// Latency delays the data coming back from the upstream by latency, give
// or take jitter.
func (p *Proxy) Latency(t testing.TB, latency, jitter time.Duration) (remove func()) {
	return p.add(t, "latency", "downstream", map[string]any{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Timeout stops all data through the proxy and, if d > 0, closes the
// connections after d: a store that hangs.
func (p *Proxy) Timeout(t testing.TB, d time.Duration) (remove func()) {
	return p.add(t, "timeout", "upstream", map[string]any{"timeout": d.Milliseconds()})
}

// ResetPeer resets connections (TCP RST) after d, at once for zero: a
// store that crashes or a load balancer that drops connections.
func (p *Proxy) ResetPeer(t testing.TB, d time.Duration) (remove func()) {
	return p.add(t, "reset_peer", "upstream", map[string]any{"timeout": d.Milliseconds()})
}

// Bandwidth limits the data coming back from the upstream to kbps
// kilobytes per second.
func (p *Proxy) Bandwidth(t testing.TB, kbps int64) (remove func()) {
	return p.add(t, "bandwidth", "downstream", map[string]any{"rate": kbps})
}

// Down closes the proxy's connections and refuses new ones until up is
// called: the store is unreachable.
func (p *Proxy) Down(t testing.TB) (up func()) {
	t.Helper()
	p.p.Stop()
	return func() {
		t.Helper()
		if err := p.p.Start(); err != nil {
			t.Errorf("toxitest: restart proxy on %s: %v", p.Addr, err)
		}
	}
}

// add adds a toxic of the given type and attributes, returning its
// removal.
func (p *Proxy) add(t testing.TB, kind, stream string, attrs map[string]any) func() {
	t.Helper()
	name := fmt.Sprintf("%s-%d", kind, p.n.Add(1))
	b, err := json.Marshal(map[string]any{"name": name, "type": kind, "stream": stream, "attributes": attrs})
	if err != nil {
		t.Fatalf("toxitest: %v", err)
	}
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
		t.Fatalf("toxitest: add %s: %v", kind, err)
	}
	return func() {
		t.Helper()
		if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
			t.Errorf("toxitest: remove %s: %v", kind, err)
		}
	}
}
