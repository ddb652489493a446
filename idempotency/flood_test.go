package idempotency_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// post sends one keyed POST over a real connection and returns the status,
// the replay header and the body.
func post(t *testing.T, c *http.Client, url, key, account string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/charges", strings.NewReader(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(idempotency.KeyHeader, key)
	if account != "" {
		req.Header.Set("X-Account", account)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(idempotency.ReplayedHeader), string(b)
}

func serve(t *testing.T, cfg idempotency.Config, h http.Handler) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(newHandler(t, cfg, h))
	c := srv.Client()
	t.Cleanup(func() {
		c.CloseIdleConnections()
		srv.Close()
	})
	return srv.URL, c
}

// A flood of keys that fills the store does not make it forget a
// completed record: the victim's retry is replayed, and the handler does
// not run a second time. The flooder gets 503s once the store is full.
func TestMemoryFloodKeepsCompleted(t *testing.T) {
	store := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 16 << 10})
	const victimKey = `"victim-charge-1"`
	var victimRuns atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(idempotency.KeyHeader) == victimKey {
			victimRuns.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"ch_1","amount":100}`)
	})
	url, c := serve(t, idempotency.Config{Store: store}, h)

	if st, _, _ := post(t, c, url, victimKey, ""); st != http.StatusCreated {
		t.Fatalf("victim's first request: %d", st)
	}
	const flood = 1000 // over ten times what 16 KiB holds
	refused := 0
	for i := 0; i < flood && refused < 20; i++ {
		switch st, _, _ := post(t, c, url, `"flood-`+strconv.Itoa(i)+`"`, ""); st {
		case http.StatusCreated:
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("flood request %d: status %d", i, st)
		}
	}
	st, replayed, body := post(t, c, url, victimKey, "")
	t.Logf("after the flood (%d refused): victim's retry %d replayed=%q; handler ran %d times for the victim's key; %d records held",
		refused, st, replayed, victimRuns.Load(), store.Len())
	if n := victimRuns.Load(); n != 1 {
		t.Errorf("the victim's handler ran %d times, want 1", n)
	}
	if st != http.StatusCreated || replayed != "true" || !strings.Contains(body, "ch_1") {
		t.Errorf("victim's retry: %d replayed=%q %q, want the stored 201 replayed", st, replayed, body)
	}
	if refused == 0 {
		t.Errorf("the flood of %d keys was never refused: the store forgot records to make room", flood)
	}
}

// One principal holding as many keys in flight as it can does not leave
// the others without room: it is refused past its share, and another
// principal's new key still runs.
func TestMemoryShareBoundsPrincipal(t *testing.T) {
	store := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 32 << 10})
	release := make(chan struct{})
	var attackerRuns, victimRuns atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Account") == "attacker" {
			attackerRuns.Add(1)
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		} else {
			victimRuns.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	})
	cfg := idempotency.Config{Store: store, Principal: func(r *http.Request) string { return r.Header.Get("X-Account") }}
	url, c := serve(t, cfg, h)

	const attackers = 300 // in flight at once: about twice what 32 KiB holds
	var refused atomic.Int32
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Go(func() {
			if st, _, _ := post(t, c, url, `"a-`+strconv.Itoa(i)+`"`, "attacker"); st == http.StatusServiceUnavailable {
				refused.Add(1)
			}
		})
	}
	defer func() {
		close(release)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the attacker's requests did not end within 20 s of their release")
		}
	}()
	for deadline := time.Now().Add(15 * time.Second); attackerRuns.Load()+refused.Load() < attackers; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 15 s, %d attacker requests run and %d were refused, of %d", attackerRuns.Load(), refused.Load(), attackers)
		}
	}
	st, _, _ := post(t, c, url, `"v-1"`, "victim")
	t.Logf("attacker: %d in flight, %d refused; victim's new key: %d, victim's handler ran %d times", attackerRuns.Load(), refused.Load(), st, victimRuns.Load())
	if st != http.StatusCreated || victimRuns.Load() != 1 {
		t.Errorf("victim's new key while the attacker floods: %d, handler ran %d times; want 201, once", st, victimRuns.Load())
	}
	if refused.Load() == 0 {
		t.Error("the attacker was never refused")
	}
}

// heapAlloc returns the live heap after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// MaxBytes bounds the heap the store holds: a flood of small records,
// then (once they expired) one of larger ones, then one of small records
// each of its own principal, never takes the live heap past 1.25 times
// MaxBytes. What the store holds is measured as the live
// heap with the store less the live heap once it is dropped, at the end,
// so that other tests' objects do not blur it.
func TestMemoryMaxBytesBoundsHeap(t *testing.T) {
	const maxBytes = 8 << 20
	const flood = 120_000 // five times what 8 MiB holds
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(t, idempotency.MemoryConfig{MaxBytes: maxBytes})
		hdr := http.Header{"Content-Type": {"application/json"}}
		type phase struct {
			name             string
			heap             int64
			refused, held, n int
		}
		var phases []phase
		fill := func(name string, n int, body []byte, principals bool) {
			p := phase{name: name, n: n}
			for i := range n {
				key := name + "-" + strconv.Itoa(i)
				ctx := ctx
				if principals {
					ctx = idempotency.WithPrincipal(ctx, "principal-"+strconv.Itoa(i))
				}
				c, err := m.Claim(ctx, key, idempotency.Fingerprint{}, time.Minute)
				if err != nil {
					p.refused++
					continue
				}
				if err := m.Complete(ctx, key, c.Token, &idempotency.Response{Status: 201, Header: hdr, Body: body}, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			p.heap, p.held = heapAlloc(), m.Len()
			phases = append(phases, p)
		}
		fill("small", flood, make([]byte, 32), false)
		time.Sleep(2 * time.Hour) // every record expires
		fill("large", flood/20, make([]byte, 2000), false)
		time.Sleep(2 * time.Hour)
		fill("principals", flood, make([]byte, 32), true)
		runtime.KeepAlive(m)
		m = nil
		base := heapAlloc()
		for _, p := range phases {
			grew := p.heap - base
			t.Logf("%s: %d keys, %d refused, %d held: the store holds %.1f MiB, MaxBytes %.1f MiB (%.2fx)",
				p.name, p.n, p.refused, p.held, float64(grew)/(1<<20), float64(maxBytes)/(1<<20), float64(grew)/maxBytes)
			if grew > maxBytes*5/4 {
				t.Errorf("%s: the store holds %d bytes, over 1.25 x MaxBytes (%d)", p.name, grew, maxBytes)
			}
		}
	})
}

// A full store is answered 503 store-full, and nothing runs, even with
// FailOpen: a flood of keys must not turn idempotency off.
func TestStoreFullFailsClosed(t *testing.T) {
	store := newMemory(t, idempotency.MemoryConfig{Shards: 1, MaxBytes: 4 << 10})
	c := &charger{}
	h := newHandler(t, idempotency.Config{Store: store, FailOpen: true}, c)
	for i := range 100 {
		w := do(h, "POST", "/charges", `"k`+strconv.Itoa(i)+`"`, "1")
		if w.Code == http.StatusCreated {
			continue
		}
		wantProblem(t, w, http.StatusServiceUnavailable, idempotency.CodeStoreFull)
		if w.Header().Get("Retry-After") == "" {
			t.Error("a store-full answer without Retry-After")
		}
		if int(c.runs.Load()) != i {
			t.Errorf("%d runs for %d keys stored: the refused request ran", c.runs.Load(), i)
		}
		return
	}
	t.Fatal("100 keys fit in 4 KiB")
}
