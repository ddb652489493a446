package unherdpg_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/services"
	"github.com/unherd/unherd/unherdpg"
)

// Every test closes its pools and servers.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newPool connects to the test database, closing the pool with t, and
// skips t when it cannot be reached.
func newPool(t testing.TB) *pgxpool.Pool { return newPoolOf(t, 32) }

// newPoolOf is newPool with at most maxConns connections.
func newPoolOf(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(services.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	return newPoolFrom(t, cfg)
}

// newPoolFrom connects with cfg, closing the pool with t, and skips t when
// the database cannot be reached.
func newPoolFrom(t testing.TB, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := unherdpg.Connect(ctx, cfg)
	if err != nil {
		services.Unavailable(t, "PostgreSQL at %s is unreachable: %v", services.PostgresDSN(), err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newSchema creates a schema of the test's own, dropped with t, so that
// parallel runs never share a table.
func newSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "unherd_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	return schema
}

// newStore returns a Store in a schema of its own, its table created.
func newStore(t testing.TB, pool *pgxpool.Pool) (*unherdpg.Store, string) {
	t.Helper()
	schema := newSchema(t, pool)
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema})
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, schema
}

// warmUp opens n of the pool's connections at once, then returns them to
// the pool idle.
func warmUp(t testing.TB, pool *pgxpool.Pool, n int) {
	t.Helper()
	var warm []*pgxpool.Conn
	for range n {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		warm = append(warm, c)
	}
	for _, c := range warm {
		c.Release()
	}
}
