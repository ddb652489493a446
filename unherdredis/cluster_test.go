package unherdredis_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/idempotency/storetest"
	"github.com/unherd/unherd/unherdredis"
)

// startCluster starts a 3-node Redis Cluster (no replicas) on loopback
// ports, stopped with t, and returns its addresses. It skips t (or fails
// it, with UNHERD_REQUIRE_SERVICES=1) when redis-server or redis-cli is
// missing or the cluster does not form.
func startCluster(t *testing.T) []string {
	t.Helper()
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		unavailable(t, "redis-server and redis-cli are needed to start a Redis Cluster: %v %v", err1, err2)
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
			unavailable(t, "starting redis-server: %v", err)
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
		unavailable(t, "redis-cli --cluster create: %v\n%s", err, out)
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

// waitFor polls f until it succeeds or d has passed. It waits on a real
// process, so it waits in real time.
func waitFor(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			unavailable(t, "waiting for %s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
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
