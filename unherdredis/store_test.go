package unherdredis_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/idempotency/storetest"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/services"
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

// startCluster starts a 3-node Redis Cluster (no replicas) on loopback
// ports, stopped with t, and returns its addresses. It skips t (or fails
// it, with UNHERD_REQUIRE_SERVICES=1) when redis-server or redis-cli is
// missing or the cluster does not form.
func startCluster(t *testing.T) []string {
	t.Helper()
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		services.Unavailable(t, "redis-server and redis-cli are needed to start a Redis Cluster: %v %v", err1, err2)
	}
	dir := t.TempDir()
	addrs := freePorts(t, 3)
	for _, addr := range addrs {
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(server,
			"--bind", "127.0.0.1", "--port", port,
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes-"+port+".conf"),
			"--cluster-node-timeout", "2000",
			"--dir", dir, "--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, port+".log"))
		if err := cmd.Start(); err != nil {
			services.Unavailable(t, "starting redis-server: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	for _, addr := range addrs {
		waitFor(t, 5*time.Second, "redis-server at "+addr, func() error {
			c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err
		})
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		services.Unavailable(t, "redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		waitFor(t, 10*time.Second, "cluster_state:ok at "+addr, func() error {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err == nil && !strings.Contains(info, "cluster_state:ok") {
				err = fmt.Errorf("not ok yet")
			}
			return err
		})
		_ = c.Close()
	}
	return addrs
}

// freePorts returns n loopback addresses whose port and cluster bus port
// (port + 10000) were free a moment ago.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for tries := 0; len(addrs) < n && tries < 100; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	if len(addrs) < n {
		t.Fatal("no free loopback ports for a Redis Cluster")
	}
	return addrs
}

// waitFor polls f, on a ticker, until it succeeds or d has passed. It
// waits on a real process, so it waits in real time.
func waitFor(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	var err error
	if !await.Until(d, 20*time.Millisecond, func() bool { err = f(); return err == nil }) {
		services.Unavailable(t, "waiting for %s: %v", what, err)
	}
}

// The store on a 3-node Redis Cluster passes the conformance suite, and
// 1,000 concurrent requests over two servers, each with its own cluster
// client, run the handler once: every script touches one key, so one
// slot.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three redis-server processes")
	}
	addrs := startCluster(t)
	newCluster := func() redis.UniversalClient {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, PoolSize: 64})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	c := newCluster()
	s := unherdredis.NewStore(c, unherdredis.StoreConfig{})
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, storetest.Options{New: func(*testing.T) idempotency.Store { return s }, Lease: testLease})
	})
	t.Run("RecordsSpreadOverNodes", func(t *testing.T) {
		nodes := map[string]bool{}
		cc := c.(*redis.ClusterClient)
		for i := range 30 {
			key := s.RecordKey(fmt.Sprint("spread-", i))
			slot, err := cc.ClusterKeySlot(context.Background(), key).Result()
			if err != nil {
				t.Fatal(err)
			}
			nodes[fmt.Sprint(slot*3/16384)] = true
		}
		if len(nodes) < 2 {
			t.Errorf("30 records all in one third of the slots")
		}
	})
	t.Run("ExactlyOnceTwoServers", func(t *testing.T) {
		res := storetest.ExactlyOnce(t, 1000, 200*time.Millisecond,
			unherdredis.NewStore(newCluster(), unherdredis.StoreConfig{}), unherdredis.NewStore(newCluster(), unherdredis.StoreConfig{}))
		t.Log(res)
	})
}
