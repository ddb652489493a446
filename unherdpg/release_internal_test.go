package unherdpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/services"
)

// releases counts the release statements sent.
type releases struct{ n atomic.Int32 }

func (r *releases) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(data.SQL, "DELETE") && strings.Contains(data.SQL, "state = 1") {
		r.n.Add(1)
	}
	return ctx
}
func (r *releases) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A claim its caller gave up on is released by the retry policy: once
// when the release succeeds or finds nothing to release, once when the
// statement cannot succeed (no such table), and five times, no more,
// when each try times out (another transaction holds the row).
func TestReleaseAbandoned(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(services.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	cnt := &releases{}
	cfg.ConnConfig.Tracer = cnt
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pool, err := Connect(cctx, cfg)
	if err != nil {
		services.Unavailable(t, "PostgreSQL at %s is unreachable: %v", services.PostgresDSN(), err)
	}
	defer pool.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "unherd_test_" + hex.EncodeToString(b[:])
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}()
	s := NewStore(pool, StoreConfig{Schema: schema, OpTimeout: 100 * time.Millisecond})

	tries := func(name string, want int32) {
		t.Helper()
		before := cnt.n.Load()
		start := time.Now()
		s.releaseAbandoned(recordKey("k"), 1)
		if got := cnt.n.Load() - before; got != want {
			t.Errorf("%s: %d tries, want %d", name, got, want)
		}
		t.Logf("%s: %d tries in %v", name, cnt.n.Load()-before, time.Since(start).Round(time.Millisecond))
	}
	tries("no table", 1)
	if err := s.EnsureSchema(ctx); err != nil {
		t.Fatal(err)
	}
	tries("no record", 1)

	if _, err := pool.Exec(ctx, `INSERT INTO `+s.table+` VALUES ($1, 1, 1, '\x00', NULL, now() + interval '1 minute')`, recordKey("k")); err != nil {
		t.Fatal(err)
	}
	held, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, `SELECT 1 FROM `+s.table+` WHERE key = $1 FOR UPDATE`, recordKey("k")); err != nil {
		t.Fatal(err)
	}
	tries("row held by another transaction", 5)
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tries("released", 1)
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+s.table).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d records, %v, after the release; want none", n, err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want failure.Class
	}{
		{&pgconn.PgError{Code: "42P01"}, failure.Permanent}, // undefined_table
		{&pgconn.PgError{Code: "42501"}, failure.Permanent}, // insufficient_privilege
		{&pgconn.PgError{Code: "40001"}, failure.Transient}, // serialization_failure
		{&pgconn.PgError{Code: "57014"}, failure.Transient}, // query_canceled (statement_timeout)
		{&pgconn.PgError{Code: "08006"}, failure.Transient}, // connection_failure
		{&pgconn.PgError{Code: "53300"}, failure.Transient}, // too_many_connections
		{context.DeadlineExceeded, failure.Timeout},         // a try's own timeout
		{&pgconn.ConnectError{}, failure.Transient},         // could not connect
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
