// Package services is what tests that use outside services share: a
// rule for a service that is missing, and a redis-server of a test's own
// that the test can kill and start again.
package services

import (
	"cmp"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RedisAddr is the Redis the tests use: UNHERD_REDIS_ADDR, by default
// 127.0.0.1:6379.
func RedisAddr() string { return cmp.Or(os.Getenv("UNHERD_REDIS_ADDR"), "127.0.0.1:6379") }

// PostgresDSN is the PostgreSQL the tests use: UNHERD_POSTGRES_DSN, by
// default postgres://postgres@127.0.0.1:5432/test.
func PostgresDSN() string {
	return cmp.Or(os.Getenv("UNHERD_POSTGRES_DSN"), "postgres://postgres@127.0.0.1:5432/test")
}

// NATSURL is the NATS server the tests use: UNHERD_NATS_URL, by default
// nats://127.0.0.1:4222.
func NATSURL() string { return cmp.Or(os.Getenv("UNHERD_NATS_URL"), "nats://127.0.0.1:4222") }

// Unavailable skips t because a service it needs is missing, or fails it
// when UNHERD_REQUIRE_SERVICES is 1 (as CI sets it), so that a missing
// service never passes for a test that ran.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("UNHERD_REQUIRE_SERVICES") == "1" {
		t.Fatalf("UNHERD_REQUIRE_SERVICES=1 and "+format, args...)
	}
	t.Skipf("SKIPPED, NOT TESTED: "+format+" (set UNHERD_REQUIRE_SERVICES=1 to fail instead)", args...)
}

// Redis is a redis-server the test started on a free loopback port, with
// no persistence: Kill stops it as a crash would, and Start brings it
// back on the same port, empty.
type Redis struct {
	// Addr is the server's host:port.
	Addr string
	t    testing.TB
	bin  string
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a redis-server for t, killed when t ends. Without a
// redis-server on the PATH, t is Unavailable.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(t, "redis-server is needed to stop a Redis in the middle of a test: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	s := &Redis{Addr: addr, t: t, bin: bin, dir: t.TempDir()}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Start starts the server, waiting up to 5 s for it to accept
// connections.
func (s *Redis) Start() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.Addr)
	s.cmd = exec.Command(s.bin, "--bind", "127.0.0.1", "--port", port, "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(s.dir, "redis.log"))
	if err := s.cmd.Start(); err != nil {
		Unavailable(s.t, "starting redis-server: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server at %s did not accept connections within 5s: %v", s.Addr, err)
		}
		//unherdvet:ignore nojitter one test waits for the redis-server it started on loopback; no other client shares it
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill kills the server by its pid, as a crash or a lost host would, and
// waits for it to exit. It does nothing when the server is not running.
func (s *Redis) Kill() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}
