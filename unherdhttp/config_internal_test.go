package unherdhttp

import (
	"net/http"
	"testing"
	"time"
)

// A nil base is a clone of http.DefaultTransport with a pool sized for a
// busy client, not net/http's 2 idle connections per host.
func TestNilBasePool(t *testing.T) {
	tr, err := NewTransport(nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	base, ok := tr.base.(*http.Transport)
	if !ok {
		t.Fatalf("nil base built a %T, want *http.Transport", tr.base)
	}
	if base.MaxIdleConnsPerHost != DefaultMaxIdleConnsPerHost || base.MaxIdleConns != DefaultMaxIdleConns {
		t.Errorf("idle pool %d per host, %d in all; want %d and %d",
			base.MaxIdleConnsPerHost, base.MaxIdleConns, DefaultMaxIdleConnsPerHost, DefaultMaxIdleConns)
	}
	if base.TLSHandshakeTimeout != DefaultConnectTimeout || base.IdleConnTimeout != 90*time.Second {
		t.Errorf("TLS handshake timeout %v, idle timeout %v; want %v and 90s", base.TLSHandshakeTimeout, base.IdleConnTimeout, DefaultConnectTimeout)
	}
	if base == http.DefaultTransport {
		t.Error("nil base is http.DefaultTransport itself, want a clone")
	}
}
