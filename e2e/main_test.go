package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/services"
	"github.com/unherd/unherd/unherdpg"
)

// Every test stops its proxies and closes its servers, pools and clients.
// Toxiproxy itself can strand a toxic's goroutine, blocked on a send,
// when a toxic is added to a link whose connection is closing: that one
// is its own and is ignored.
func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the outage tests make hundreds on
	// purpose, and report the errors the middleware saw by kind instead.
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"))
}

// quiet is a go-redis logger that drops what it is given.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// newRedis connects to addr (the test Redis or a proxy in front of it).
func newRedis(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newPool connects to the database at dsn, in the test's schema when
// schema is set.
func newPool(t testing.TB, dsn, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := unherdpg.PoolConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 32
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := unherdpg.Connect(ctx, cfg)
	if err != nil {
		services.Unavailable(t, "PostgreSQL at %s is unreachable: %v", dsn, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// requireServices skips (or fails) t unless Redis and PostgreSQL answer,
// and returns a pool on a fresh schema of t's own, dropped with t.
func requireServices(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := newRedis(t, services.RedisAddr()).Ping(ctx).Err(); err != nil {
		services.Unavailable(t, "Redis at %s is unreachable: %v", services.RedisAddr(), err)
	}
	admin := newPool(t, services.PostgresDSN(), "")
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "unherd_e2e_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	return admin, schema
}
