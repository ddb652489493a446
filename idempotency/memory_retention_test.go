package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// reply200 is a 200-byte JSON body, the size of a typical API answer.
var reply200 = `{"id":"ch_3MmlLrLkdIwHu7ix0snN0B15","object":"charge","amount":1099,"currency":"eur","status":"succeeded","paid":true,"captured":true,"livemode":false,"metadata":{},"receipt_url":"https://x.example/"}`

// steady sends n requests, each with a key of its own, one every gap of
// virtual time, through the middleware built from cfg, and returns how
// many were refused 503. It runs in the caller's synctest bubble.
func steady(t *testing.T, cfg idempotency.Config, n int, gap time.Duration) (refused int) {
	t.Helper()
	if len(reply200) != 200 {
		t.Fatalf("reply200 is %d bytes", len(reply200))
	}
	m, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(reply200))
	}))
	for i := range n {
		r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":1099}`))
		r.Header.Set(idempotency.KeyHeader, "key-"+strconv.Itoa(i))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("request %d: status %d", i, w.Code)
		}
		time.Sleep(gap)
	}
	return refused
}

// Honest traffic through the middleware, each request with a key of its
// own and a 200-byte reply, never meets a full store: with the defaults,
// 200,000 keys at 100 a second (about 1.6 times what 64 MiB holds); with
// MaxBytes at 1 MiB, 20,000 keys at one a second (about 15 times what it
// holds); one principal's 20,000 keys at 10 a second (1.6 times its
// share). Rerun with
//
//	go test ./idempotency -run TestMemorySteadyTraffic -v
func TestMemorySteadyTraffic(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxBytes  int64 // 0: the middleware's own Memory store
		n         int
		gap       time.Duration
		principal bool // one caller, named by Config.Principal
	}{
		{"defaults", 0, 200_000, 10 * time.Millisecond, false},
		{"1MiB", 1 << 20, 20_000, time.Second, false},
		// One caller's keys, bound by its share (a tenth of 64 MiB):
		// 20,000 of them at 10 a second, 1.6 times what the share holds.
		{"one principal", 0, 20_000, 100 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.n > 50_000 {
				t.Skipf("%d requests", tc.n)
			}
			synctest.Test(t, func(t *testing.T) {
				var cfg idempotency.Config
				if tc.maxBytes > 0 {
					cfg.Store = newMemory(t, idempotency.MemoryConfig{MaxBytes: tc.maxBytes})
				}
				if tc.principal {
					cfg.Principal = func(*http.Request) string { return "acct_1" }
				}
				refused := steady(t, cfg, tc.n, tc.gap)
				t.Logf("%d new keys, one every %v, 200-byte replies: %d refused 503", tc.n, tc.gap, refused)
				if refused > 0 {
					t.Errorf("%d of %d honest requests refused", refused, tc.n)
				}
			})
		})
	}
}

// claimComplete claims key and completes it with a 200-byte reply, as a
// first request does; it returns Claim's error.
func claimComplete(t *testing.T, m *idempotency.Memory, ctx context.Context, key string) error {
	t.Helper()
	c, err := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Minute)
	if err != nil {
		return err
	}
	if c.State != idempotency.Acquired {
		t.Fatalf("claim of new key %s: %v, want acquired", key, c.State)
	}
	resp := &idempotency.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(reply200)}
	if err := m.Complete(ctx, key, c.Token, resp, 24*time.Hour); err != nil {
		t.Fatalf("complete %s: %v", key, err)
	}
	return nil
}

// Steady traffic of new keys, ten times what the store holds, is never
// refused when the records completed within MinRetention fit: the store
// evicts the oldest of those past it. A retry within MinRetention of
// its request's completion replays. With a principal, the same holds
// within the principal's share.
func TestMemoryRetentionSteady(t *testing.T) {
	for _, tc := range []struct {
		name      string
		principal bool
	}{{"no principal", false}, {"one principal", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const maxBytes = 256 << 10
				cfg := idempotency.MemoryConfig{Shards: 4, MaxBytes: maxBytes, MinRetention: time.Minute}
				if tc.principal {
					cfg.MaxShare = 0.25
				}
				m := newMemory(t, cfg)
				ctx := context.Background()
				if tc.principal {
					ctx = idempotency.WithPrincipal(ctx, "acct_1")
				}
				// How many records the store (or the share) holds: claims
				// of new keys without a pause until the first refusal.
				probe := newMemory(t, cfg)
				holds := 0
				for claimComplete(t, probe, ctx, "probe-"+strconv.Itoa(holds)) == nil {
					holds++
				}
				// A third of that completes within each MinRetention: even
				// the fullest of the shards (keys do not spread evenly)
				// has room for its share of the recent ones.
				n := 10 * holds
				gap := cfg.MinRetention * 3 / time.Duration(holds)
				for i := range n {
					key := "k" + strconv.Itoa(i)
					if err := claimComplete(t, m, ctx, key); err != nil {
						t.Fatalf("new key %d of %d (the store holds %d), one every %v: %v", i, n, holds, gap, err)
					}
					if i%97 == 0 && i >= 10 { // a retry of a recent request replays
						old := "k" + strconv.Itoa(i-10)
						if c, err := m.Claim(ctx, old, idempotency.Fingerprint{}, time.Minute); err != nil || c.State != idempotency.Completed || string(c.Response.Body) != reply200 {
							t.Fatalf("retry of %s, completed %v ago: %v %v, want its response replayed", old, 10*gap, c.State, err)
						}
					}
					time.Sleep(gap)
				}
				t.Logf("%d new keys, one every %v, in a store that holds %d: none refused; %d held", n, gap, holds, m.Len())
			})
		})
	}
}

// A flood of new keys within MinRetention fills the store and is
// refused (ErrStoreFull); it never evicts a recent completed record, whose
// retry still replays, in flight or completed. Once the flood's records
// are past their retention, new keys find room again.
func TestMemoryRetentionFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 64 << 10, MinRetention: 5 * time.Minute})
		// Old traffic, past its retention: the flood may evict it.
		for i := range 20 {
			if err := claimComplete(t, m, ctx, "old-"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Minute)
		if err := claimComplete(t, m, ctx, "victim"); err != nil {
			t.Fatal(err)
		}
		inFlight, err := m.Claim(ctx, "running", idempotency.Fingerprint{}, time.Hour)
		if err != nil || inFlight.State != idempotency.Acquired {
			t.Fatalf("claim: %v %v", inFlight.State, err)
		}
		refused, held := 0, 0
		for i := 0; i < 2000; i++ { // within a second: all within the retention
			switch err := claimComplete(t, m, ctx, "flood-"+strconv.Itoa(i)); {
			case err == nil:
				held++
			case errors.Is(err, idempotency.ErrStoreFull):
				refused++
			default:
				t.Fatalf("flood key %d: %v, want nil or ErrStoreFull", i, err)
			}
			if i%100 == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		t.Logf("flood of 2000 new keys within a second: %d held, %d refused", held, refused)
		if refused == 0 || held == 0 {
			t.Errorf("flood: %d held, %d refused; want the store to fill and refuse the rest", held, refused)
		}
		c, err := m.Claim(ctx, "victim", idempotency.Fingerprint{}, time.Hour)
		if err != nil || c.State != idempotency.Completed || c.Response.Omitted || string(c.Response.Body) != reply200 {
			t.Errorf("victim's retry after the flood: %v %v, want completed with its response", c.State, err)
		}
		if c, err := m.Claim(ctx, "running", idempotency.Fingerprint{}, time.Hour); err != nil || c.State != idempotency.InFlight {
			t.Errorf("in-flight key after the flood: %v %v, want in flight", c.State, err)
		}
		// The flood is over; past its retention, its records make room.
		time.Sleep(5 * time.Minute)
		if err := claimComplete(t, m, ctx, "after"); err != nil {
			t.Errorf("new key once the flood's records are past their retention: %v", err)
		}
		if c, err := m.Claim(ctx, "running", idempotency.Fingerprint{}, time.Hour); err != nil || c.State != idempotency.InFlight {
			t.Errorf("in-flight key: %v %v, want in flight: in-flight records are never evicted", c.State, err)
		}
	})
}

// One principal's flood within MinRetention is refused past its share,
// while another principal's new keys still run.
func TestMemoryRetentionShareFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t, idempotency.MemoryConfig{Shards: 2, MaxBytes: 128 << 10, MaxShare: 0.25})
		flooder := idempotency.WithPrincipal(context.Background(), "flooder")
		other := idempotency.WithPrincipal(context.Background(), "other")
		refused := 0
		for i := range 1000 {
			if err := claimComplete(t, m, flooder, "f-"+strconv.Itoa(i)); errors.Is(err, idempotency.ErrStoreFull) {
				refused++
			} else if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // 100 s in all: within the retention
		}
		if refused == 0 {
			t.Error("a principal's flood within the retention was never refused")
		}
		for i := range 20 {
			if err := claimComplete(t, m, other, "o-"+strconv.Itoa(i)); err != nil {
				t.Errorf("another principal's key %d during the flood: %v", i, err)
			}
		}
		c, err := m.Claim(flooder, "f-0", idempotency.Fingerprint{}, time.Hour)
		if err != nil || c.State != idempotency.Completed {
			t.Errorf("the flooder's first key: %v %v, want completed", c.State, err)
		}
	})
}

func TestNewMemoryRejectsNegativeRetention(t *testing.T) {
	if _, err := idempotency.NewMemory(idempotency.MemoryConfig{MinRetention: -time.Second}); err == nil {
		t.Error("a negative MinRetention accepted")
	}
}

// MaxBytes bounds the heap while the store evicts records past their
// retention to make room: five times what the store holds, through it,
// never takes the live heap past 1.25 times MaxBytes.
func TestMemoryRetentionBoundsHeap(t *testing.T) {
	const maxBytes = 8 << 20
	const n = 80_000 // about five times what 8 MiB holds
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(t, idempotency.MemoryConfig{MaxBytes: maxBytes, MinRetention: time.Second})
		for i := range n {
			if err := claimComplete(t, m, ctx, "k"+strconv.Itoa(i)); err != nil {
				t.Fatalf("key %d: %v", i, err)
			}
			if i%1000 == 999 {
				time.Sleep(time.Second)
			}
		}
		held := m.Len()
		heap := heapAlloc()
		runtime.KeepAlive(m)
		m = nil
		grew := heap - heapAlloc()
		t.Logf("%d keys, %d held: the store holds %.1f MiB, MaxBytes %.1f MiB (%.2fx)", n, held, float64(grew)/(1<<20), float64(maxBytes)/(1<<20), float64(grew)/maxBytes)
		if held >= n/3 {
			t.Errorf("%d of %d records held: the store did not evict", held, n)
		}
		if grew > maxBytes*5/4 {
			t.Errorf("the store holds %d bytes, over 1.25 x MaxBytes (%d)", grew, maxBytes)
		}
	})
}

// BenchmarkMemoryFull claims and completes a new key per op in a full
// store, so that every claim makes room: by evicting a record past its
// retention (Aged) or an expired one (Expired).
func BenchmarkMemoryFull(b *testing.B) {
	for _, bc := range []struct {
		name      string
		retention time.Duration
		ttl       time.Duration
	}{
		{"Aged", time.Nanosecond, 24 * time.Hour},
		{"Expired", time.Hour, time.Nanosecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := idempotency.NewMemory(idempotency.MemoryConfig{MaxBytes: 4 << 20, MinRetention: bc.retention})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			resp := &idempotency.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(reply200)}
			const warm = 50_000 // fills the store
			keys := make([]string, warm+b.N)
			for i := range keys {
				keys[i] = "k-" + strconv.Itoa(i)
			}
			op := func(key string) {
				c, err := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if err := m.Complete(ctx, key, c.Token, resp, bc.ttl); err != nil {
					b.Fatal(err)
				}
			}
			for _, k := range keys[:warm] {
				op(k)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for _, k := range keys[warm:] {
				op(k)
			}
		})
	}
}
