package unherdpg_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/unherdpg"
)

// A claim whose caller's deadline passes while the database is slow to
// answer (here: the key's row locked by another transaction) returns at
// the deadline with its token, keeps its connection (no reconnection, no
// cancel request), and, when it takes effect afterwards, is released by
// the store, so the key is free again.
func TestClaimPastCallerDeadline(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(dsn())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	pool := newPoolFrom(t, cfg)
	admin := newPool(t)
	schema := newSchema(t, admin)
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema})
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var warm []*pgxpool.Conn
	for range 2 { // open both connections
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		warm = append(warm, c)
	}
	for _, c := range warm {
		c.Release()
	}
	opened := pool.Stat().NewConnsCount()

	// Another transaction inserts the key's record and holds it: the
	// claim's INSERT waits for it to end.
	blocker, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = blocker.Rollback(ctx) }()
	table := pgx.Identifier{schema, unherdpg.DefaultTable}.Sanitize()
	if _, err := blocker.Exec(ctx, `INSERT INTO `+table+` VALUES (sha256(convert_to('k', 'UTF8')), 1, 1, '\x00', NULL, now() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	start := time.Now()
	c, err := s.Claim(cctx, "k", idempotency.Fingerprint{}, time.Minute)
	cancel()
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || c.Token == 0 || took > time.Second {
		t.Fatalf("claim past its caller's deadline: %+v, %v after %v; want context.DeadlineExceeded with a token, at the deadline", c, err, took)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The abandoned claim now takes effect, and the store releases it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := s.Claim(ctx, "k", idempotency.Fingerprint{}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if c.State == idempotency.Acquired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("key still %v 5s after the abandoned claim could take effect; want it released", c.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := pool.Stat().NewConnsCount() - opened; n != 0 {
		t.Errorf("%d connections opened after the caller's deadline; want the claim's connection kept", n)
	}
}

// PoolConfig bounds connecting and pinging, checks the pool's health
// often, and keeps what the connection string sets.
func TestPoolConfig(t *testing.T) {
	cfg, err := unherdpg.PoolConfig("postgres://u@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.ConnectTimeout != unherdpg.DefaultConnectTimeout || cfg.PingTimeout != unherdpg.DefaultPingTimeout ||
		cfg.HealthCheckPeriod != unherdpg.DefaultHealthCheckPeriod || cfg.ConnConfig.DialFunc == nil {
		t.Errorf("PoolConfig: connect timeout %v, ping timeout %v, health check period %v; want the defaults",
			cfg.ConnConfig.ConnectTimeout, cfg.PingTimeout, cfg.HealthCheckPeriod)
	}
	cfg, err = unherdpg.PoolConfig("postgres://u@127.0.0.1:1/db?connect_timeout=9&pool_health_check_period=7s")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.ConnectTimeout != 9*time.Second || cfg.HealthCheckPeriod != 7*time.Second {
		t.Errorf("PoolConfig with the connection string's settings: connect timeout %v, health check period %v; want 9s and 7s",
			cfg.ConnConfig.ConnectTimeout, cfg.HealthCheckPeriod)
	}
	if _, err := unherdpg.PoolConfig("postgres://u@127.0.0.1:1/db?connect_timeout=x"); err == nil {
		t.Error("PoolConfig with a malformed connect_timeout: no error")
	}

	// Its dialer connects (TCP_USER_TIMEOUT and keep-alives accepted by
	// the kernel).
	cfg, err = unherdpg.PoolConfig(dsn())
	if err != nil {
		t.Fatal(err)
	}
	pool := newPoolFrom(t, cfg)
	if err := pool.Ping(context.Background()); err != nil {
		t.Errorf("a pool from PoolConfig: %v", err)
	}
}
