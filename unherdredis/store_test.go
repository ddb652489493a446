package unherdredis_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/idempotency/storetest"
	"github.com/unherd/unherd/unherdredis"
)

// Leases in the conformance runs are measured by Redis's clock, in real
// time: 250 ms is well above a loopback round trip and a loaded
// machine's oversleep, and keeps the suite near three seconds.
const testLease = 250 * time.Millisecond

func TestStoreConformance(t *testing.T) {
	c := newClient(t)
	s := unherdredis.NewStore(c, unherdredis.StoreConfig{})
	storetest.Run(t, storetest.Options{New: func(*testing.T) idempotency.Store { return s }, Lease: testLease})
}

// 1,000 concurrent requests with one key, spread over two servers that
// each have their own Redis client, run the handler exactly once.
func TestExactlyOnceTwoServers(t *testing.T) {
	a, b := newClient(t), newClient(t)
	res := storetest.ExactlyOnce(t, 1000, 200*time.Millisecond,
		unherdredis.NewStore(a, unherdredis.StoreConfig{}), unherdredis.NewStore(b, unherdredis.StoreConfig{}))
	t.Log(res)
}

func TestRecordKeyHashTag(t *testing.T) {
	s := unherdredis.NewStore(nil, unherdredis.StoreConfig{Prefix: "p:"})
	k := s.RecordKey(`5:alice{weird}key`)
	if !strings.HasPrefix(k, "p:{") || !strings.HasSuffix(k, "}") || strings.Count(k, "{") != 1 || len(k) != len("p:{}")+32 {
		t.Errorf("RecordKey = %q, want p:{<32 hex digits>}", k)
	}
	if s.RecordKey("a") == s.RecordKey("b") {
		t.Error("two keys share a record")
	}
}

// counter counts the commands a client sends, a pipeline's or a script's
// as one round trip each.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// roundTrips measures the Redis round trips per request: a first request
// (claim and complete), a replay (claim), and a handler that holds its
// lease for five leases (renewals every third of one).
func TestRoundTrips(t *testing.T) {
	c := newClient(t)
	cnt := &counter{}
	c.AddHook(cnt)
	s := unherdredis.NewStore(c, unherdredis.StoreConfig{})
	lease := 300 * time.Millisecond
	var hold atomic.Int64
	m, err := idempotency.New(idempotency.Config{Store: s, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(hold.Load()))
		w.WriteHeader(http.StatusCreated)
	}))
	send := func(key string) int {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
		r.Header.Set(idempotency.KeyHeader, key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	prefix := fmt.Sprintf("rt-%d-", time.Now().UnixNano())
	send(prefix + "warm") // loads the scripts (EVALSHA, then EVAL on NOSCRIPT)
	const n = 100
	measure := func(name string, key func(i int) string, want float64) {
		before := cnt.n.Load()
		for i := range n {
			if code := send(key(i)); code != http.StatusCreated {
				t.Fatalf("%s: status %d", name, code)
			}
		}
		got := float64(cnt.n.Load()-before) / n
		t.Logf("%s: %.2f Redis round trips per request", name, got)
		if got != want {
			t.Errorf("%s: %.2f round trips per request, want %.0f", name, got, want)
		}
	}
	measure("first request (claim, complete)", func(i int) string { return fmt.Sprintf("%snew-%d", prefix, i) }, 2)
	measure("replay (claim)", func(i int) string { return fmt.Sprintf("%snew-%d", prefix, i) }, 1)

	hold.Store(int64(5 * lease / 3))
	before := cnt.n.Load()
	send(prefix + "slow")
	got := cnt.n.Load() - before
	t.Logf("a handler running %v, 5/3 of its lease: %d round trips (claim, a renewal per third of a lease, complete)", 5*lease/3, got)
	if got < 4 || got > 8 {
		t.Errorf("slow handler: %d round trips, want claim, 2 to 5 renewals and complete", got)
	}
}

// A holder that dies keeps its key for its lease; then 100 concurrent
// retries run the handler once.
func TestRerunAfterLease(t *testing.T) {
	storetest.RerunAfterLease(t, unherdredis.NewStore(newClient(t), unherdredis.StoreConfig{}), time.Second, 100)
}

// With Redis unreachable (nothing listens on the port), the middleware
// fails closed.
func TestUnreachableFailsClosed(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	storetest.FailsClosed(t, unherdredis.NewStore(c, unherdredis.StoreConfig{}))
}

// BenchmarkMiddlewareRedis is a first request with a new key (claim and
// complete, two round trips) through the middleware on the test Redis.
func BenchmarkMiddlewareRedis(b *testing.B) {
	s := unherdredis.NewStore(newClient(b), unherdredis.StoreConfig{})
	storetest.BenchmarkNewKeys(b, s)
}

// An attacker's requests through the middleware on Redis: no caller
// reads another's response, no secret is stored, no differing request
// replays.
func TestStoreHostile(t *testing.T) {
	storetest.Hostile(t, unherdredis.NewStore(newClient(t), unherdredis.StoreConfig{}))
}
