package idempotency_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/idempotency/storetest"
	"github.com/unherd/unherd/internal/configtest"
)

func newMemory(t testing.TB, cfg idempotency.MemoryConfig) *idempotency.Memory {
	t.Helper()
	return configtest.Must(idempotency.NewMemory(cfg))(t)
}

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, storetest.Options{
		New:    func(t *testing.T) idempotency.Store { return newMemory(t, idempotency.MemoryConfig{}) },
		Lease:  time.Second,
		Bubble: synctest.Test,
	})
}

func TestMemoryConformanceOneShard(t *testing.T) {
	storetest.Run(t, storetest.Options{
		New:    func(t *testing.T) idempotency.Store { return newMemory(t, idempotency.MemoryConfig{Shards: 1}) },
		Lease:  time.Second,
		Bubble: synctest.Test,
	})
}

func TestNewMemoryRejectsNegative(t *testing.T) {
	for _, cfg := range []idempotency.MemoryConfig{{Shards: -1}, {MaxBytes: -1}} {
		if _, err := idempotency.NewMemory(cfg); err == nil {
			t.Errorf("NewMemory(%+v) accepted", cfg)
		}
	}
}

// A full store refuses new claims rather than forget a live record, in
// flight or completed, and makes room by evicting expired ones.
func TestMemoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 8 << 10})
		body := &idempotency.Response{Status: 200, Body: make([]byte, 512)}
		held := 0
		for i := range 100 {
			key := "k" + strconv.Itoa(i)
			c, err := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Hour)
			if err != nil {
				if !errors.Is(err, idempotency.ErrStoreFull) {
					t.Fatalf("claim %d: %v, want ErrStoreFull", i, err)
				}
				continue
			}
			if err := m.Complete(ctx, key, c.Token, body, time.Hour); err != nil {
				t.Fatal(err)
			}
			held++
		}
		if held == 0 || held >= 16 {
			t.Fatalf("%d records held in 8 KiB of 700-byte records", held)
		}
		for i := range held {
			// The last completion may have found no room for its body.
			key := "k" + strconv.Itoa(i)
			if c, err := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Hour); err != nil || c.State != idempotency.Completed || len(c.Response.Body) != 512 && i < held-1 {
				t.Errorf("record %s of a full store: %v %v, want completed with its body", key, c.State, err)
			}
		}
		time.Sleep(2 * time.Hour) // every record expires
		if c, err := m.Claim(ctx, "new", idempotency.Fingerprint{}, time.Hour); err != nil || c.State != idempotency.Acquired {
			t.Errorf("claim once the records expired: %v %v, want acquired", c.State, err)
		}
	})

	ctx := context.Background()
	full := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 1 << 10})
	var err error
	for i := 0; err == nil && i < 100; i++ {
		_, err = full.Claim(ctx, "f"+strconv.Itoa(i), idempotency.Fingerprint{}, time.Hour)
	}
	if !errors.Is(err, idempotency.ErrStoreFull) {
		t.Errorf("claims of in-flight records past the bound: %v, want ErrStoreFull", err)
	}

	// A completion too large for the bound keeps the status only.
	small := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 1 << 10})
	c, _ := small.Claim(ctx, "big", idempotency.Fingerprint{}, time.Hour)
	if err := small.Complete(ctx, "big", c.Token, &idempotency.Response{Status: 201, Body: make([]byte, 4<<10)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	c, _ = small.Claim(ctx, "big", idempotency.Fingerprint{}, time.Hour)
	if c.State != idempotency.Completed || !c.Response.Omitted || c.Response.Status != 201 {
		t.Errorf("oversized completion: %v %+v, want completed, status 201, omitted", c.State, c.Response)
	}
}

// Expired records are evicted as the store is used, without being read.
func TestMemoryEvictsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(t, idempotency.MemoryConfig{Shards: 1})
		for i := range 50 {
			key := "old" + strconv.Itoa(i)
			c, _ := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Minute)
			if i%2 == 0 {
				_ = m.Complete(ctx, key, c.Token, &idempotency.Response{Status: 200}, time.Hour)
			}
		}
		time.Sleep(2 * time.Hour)
		for i := range 50 {
			_, _ = m.Claim(ctx, "new"+strconv.Itoa(i), idempotency.Fingerprint{}, time.Minute)
		}
		if n := m.Len(); n > 50 {
			t.Errorf("%d records after 50 new claims and 50 expired records, want the expired evicted", n)
		}
	})
}

func TestResponseBinaryRoundTrip(t *testing.T) {
	in := &idempotency.Response{Status: 201, Header: map[string][]string{"A": {"1", "2"}, "B": {""}}, Body: []byte("body"), Omitted: true}
	b, _ := in.MarshalBinary()
	var out idempotency.Response
	if err := out.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if out.Status != 201 || string(out.Body) != "body" || !out.Omitted || len(out.Header["A"]) != 2 || out.Header["B"][0] != "" {
		t.Errorf("round trip: %+v", out)
	}
	for i := range len(b) - 4 { // cut anywhere within the header part
		if err := new(idempotency.Response).UnmarshalBinary(b[:i]); err == nil && i < 3 {
			t.Errorf("truncated to %d bytes: accepted", i)
		}
	}
}

func FuzzResponseUnmarshal(f *testing.F) {
	in := &idempotency.Response{Status: 200, Header: map[string][]string{"K": {"v"}}, Body: []byte("x")}
	b, _ := in.MarshalBinary()
	f.Add(b)
	f.Add([]byte{1, 0, 200, 1, 255, 255, 255, 255, 15})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r idempotency.Response
		if err := r.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, idempotency.ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		again, _ := r.MarshalBinary()
		var r2 idempotency.Response
		if err := r2.UnmarshalBinary(again); err != nil || r2.Status != r.Status || string(r2.Body) != string(r.Body) {
			t.Fatalf("re-encoding a decoded record: %v", err)
		}
	})
}

// 1,000 concurrent requests with one key over two servers sharing one
// Memory store run the handler once.
func TestMemoryExactlyOnce(t *testing.T) {
	s := newMemory(t, idempotency.MemoryConfig{})
	t.Log(storetest.ExactlyOnce(t, 1000, 100*time.Millisecond, s, s))
}

// An attacker's requests through the middleware on the memory store: no
// caller reads another's response, no secret is stored, no differing
// request replays.
func TestMemoryHostile(t *testing.T) {
	storetest.Hostile(t, newMemory(t, idempotency.MemoryConfig{}))
}

func TestNewMemoryRejectsShare(t *testing.T) {
	for _, share := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := idempotency.NewMemory(idempotency.MemoryConfig{MaxShare: share}); err == nil {
			t.Errorf("MaxShare %v accepted", share)
		}
	}
}

func TestPrincipalFromContext(t *testing.T) {
	ctx := context.Background()
	if p, ok := idempotency.PrincipalFromContext(ctx); ok {
		t.Errorf("no principal: got %q", p)
	}
	if p, ok := idempotency.PrincipalFromContext(idempotency.WithPrincipal(ctx, "")); !ok || p != "" {
		t.Errorf("empty principal: %q %v, want \"\" true", p, ok)
	}
	type other struct{}
	ctx = idempotency.WithPrincipal(context.WithValue(ctx, other{}, 1), "acct_1")
	if p, ok := idempotency.PrincipalFromContext(ctx); !ok || p != "acct_1" || ctx.Value(other{}) != 1 {
		t.Errorf("principal %q %v, other value %v", p, ok, ctx.Value(other{}))
	}
}

// A principal is refused past its share while another principal, and
// claims without a principal, still find room; releasing its records
// gives the share back.
func TestMemoryShare(t *testing.T) {
	ctx := context.Background()
	m := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 64 << 10, MaxShare: 0.25})
	claim := func(ctx context.Context, key string) (uint64, error) {
		c, err := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Hour)
		return c.Token, err
	}
	a := idempotency.WithPrincipal(ctx, "a")
	held := map[string]uint64{}
	for i := 0; ; i++ {
		key := "a" + strconv.Itoa(i)
		token, err := claim(a, key)
		if err != nil {
			if !errors.Is(err, idempotency.ErrStoreFull) {
				t.Fatalf("claim past the share: %v, want ErrStoreFull", err)
			}
			break
		}
		held[key] = token
		if i > 1000 {
			t.Fatal("a principal holds over 1000 records in a quarter of 64 KiB")
		}
	}
	if _, err := claim(idempotency.WithPrincipal(ctx, "b"), "b0"); err != nil {
		t.Errorf("another principal's claim: %v", err)
	}
	unscoped := 0
	for ; unscoped < 10000; unscoped++ {
		if _, err := claim(ctx, "u"+strconv.Itoa(unscoped)); err != nil {
			break
		}
	}
	if unscoped <= len(held) {
		t.Errorf("claims without a principal: %d held, want them bound by the store, not by a share (%d)", unscoped, len(held))
	}
	// The store is full now: releasing a's records makes room for a again.
	if _, err := claim(a, "a-new"); !errors.Is(err, idempotency.ErrStoreFull) {
		t.Fatalf("claim in a full store: %v, want ErrStoreFull", err)
	}
	for key, token := range held {
		if err := m.Release(ctx, key, token); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for ; n < 10000; n++ {
		if _, err := claim(a, "a-new"+strconv.Itoa(n)); err != nil {
			break
		}
	}
	// The map slots of released records are counted until their waste
	// makes the shard rebuild its maps, at a quarter of the live ones.
	if n < len(held)*3/4 || n > len(held) {
		t.Errorf("after releasing its %d records, the principal claimed %d", len(held), n)
	}
}

// The share is of the whole store, not of a shard: with the defaults, a
// principal's response of a few hundred KiB, larger than a tenth of a
// shard, is stored and replayed.
func TestMemoryShareOfStore(t *testing.T) {
	ctx := idempotency.WithPrincipal(context.Background(), "acct_1")
	m := newMemory(t, idempotency.MemoryConfig{})
	c, err := m.Claim(ctx, "k", idempotency.Fingerprint{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Complete(ctx, "k", c.Token, &idempotency.Response{Status: 200, Body: make([]byte, 600<<10)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	c, err = m.Claim(ctx, "k", idempotency.Fingerprint{}, time.Hour)
	if err != nil || c.State != idempotency.Completed || c.Response.Omitted || len(c.Response.Body) != 600<<10 {
		t.Errorf("a 600 KiB response: %v %v, want it completed and replayed whole", c.State, err)
	}
}
