package unherdpg_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/idempotency/storetest"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/services"
	"github.com/unherd/unherd/unherdpg"
)

// Leases are measured by the database's clock, in real time.
const testLease = 250 * time.Millisecond

func TestStoreConformance(t *testing.T) {
	s, _ := newStore(t, newPool(t))
	storetest.Run(t, storetest.Options{New: func(*testing.T) idempotency.Store { return s }, Lease: testLease})
}

func TestEnsureSchemaTwice(t *testing.T) {
	s, _ := newStore(t, newPool(t))
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatalf("second EnsureSchema: %v", err)
	}
}

func TestDeleteExpired(t *testing.T) {
	s, _ := newStore(t, newPool(t))
	ctx := context.Background()
	for i := range 3 {
		if _, err := s.Claim(ctx, fmt.Sprint("k", i), idempotency.Fingerprint{}, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Claim(ctx, "live", idempotency.Fingerprint{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if n, err := s.DeleteExpired(ctx); err != nil || n != 3 {
		t.Errorf("DeleteExpired = %d, %v; want 3", n, err)
	}
}

// 1,000 concurrent requests with one key, spread over two servers with
// pools of their own, run the handler exactly once.
func TestExactlyOnceTwoServers(t *testing.T) {
	a := newPool(t)
	s, schema := newStore(t, a)
	other := unherdpg.NewStore(newPool(t), unherdpg.StoreConfig{Schema: schema})
	t.Log(storetest.ExactlyOnce(t, 1000, 200*time.Millisecond, s, other))
}

// counter counts the statements a pool's connections send, each one
// round trip (pgx sends a parameterised query as one message batch).
type counter struct{ n atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func TestRoundTrips(t *testing.T) {
	pool := newPool(t)
	_, schema := newStore(t, pool)
	cfg := pool.Config().Copy()
	cnt := &counter{}
	cfg.ConnConfig.Tracer = cnt
	traced := newPoolFrom(t, cfg)
	s := unherdpg.NewStore(traced, unherdpg.StoreConfig{Schema: schema})
	plain, err := idempotency.New(idempotency.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	plainH := plain.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	txH := plain.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := s.InTx(r.Context(), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
			_, err := tx.Exec(ctx, "SELECT 1") // the handler's own statement
			return &idempotency.Response{Status: 201}, err
		})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		resp.Send(w)
	}))
	send := func(h http.Handler, key string) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
		r.Header.Set(idempotency.KeyHeader, key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 201 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	const n = 50
	measure := func(name string, h http.Handler, key string, want float64) {
		before := cnt.n.Load()
		for i := range n {
			send(h, fmt.Sprint(key, i))
		}
		got := float64(cnt.n.Load()-before) / n
		t.Logf("%s: %.2f PostgreSQL round trips per request", name, got)
		if got != want {
			t.Errorf("%s: %.2f round trips per request, want %.0f", name, got, want)
		}
	}
	measure("first request (claim, complete)", plainH, "plain-", 2)
	measure("replay (claim)", plainH, "plain-", 1)
	measure("first request through InTx (claim, begin, the handler's statement, complete, commit)", txH, "tx-", 5)
}

// A handler using InTx commits its effect and the completed record
// together: the middleware does not complete it again, a retry replays
// it, and a transaction whose lease was lost commits nothing.
func TestInTx(t *testing.T) {
	pool := newPool(t)
	s, schema := newStore(t, pool)
	ctx := context.Background()
	charges := pgx.Identifier{schema, "charges"}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE "+charges+" (key text)"); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+charges).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var status atomic.Int32
	status.Store(201)
	m, err := idempotency.New(idempotency.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := s.InTx(r.Context(), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
			if _, err := tx.Exec(ctx, "INSERT INTO "+charges+" VALUES ($1)", r.Header.Get(idempotency.KeyHeader)); err != nil {
				return nil, err
			}
			return &idempotency.Response{Status: int(status.Load()), Header: http.Header{"X-Charge": {"1"}}, Body: []byte("charged")}, nil
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		resp.Send(w)
	}))
	send := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
		r.Header.Set(idempotency.KeyHeader, key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := send("a"); w.Code != 201 || w.Body.String() != "charged" {
		t.Fatalf("first: %d %q", w.Code, w.Body)
	}
	if w := send("a"); w.Code != 201 || w.Header().Get(idempotency.ReplayedHeader) != "true" || w.Header().Get("X-Charge") != "1" {
		t.Fatalf("retry: %d %v, want the replay", w.Code, w.Header())
	}
	if n := count(); n != 1 {
		t.Errorf("%d charges after a request and its retry, want 1", n)
	}

	// A 5xx rolls the charge back and releases the key.
	status.Store(503)
	if w := send("b"); w.Code != 503 {
		t.Fatalf("5xx: %d", w.Code)
	}
	status.Store(201)
	if w := send("b"); w.Code != 201 || w.Header().Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("retry after a 5xx: %d, want a fresh run", w.Code)
	}
	if n := count(); n != 2 {
		t.Errorf("%d charges, want 2 (the 5xx's rolled back)", n)
	}

	// A lease lost to another claim: the charge is rolled back.
	c, err := s.Claim(ctx, "c", idempotency.Fingerprint{}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := s.Claim(ctx, "c", idempotency.Fingerprint{}, time.Hour); err != nil { // the takeover
		t.Fatal(err)
	}
	lease := &idempotency.Lease{Key: "c", Token: c.Token, TTL: time.Hour, MaxResponseBody: 1 << 20}
	_, err = s.InTx(idempotency.ContextWithLease(ctx, lease), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
		_, err := tx.Exec(ctx, "INSERT INTO "+charges+" VALUES ('c')")
		return &idempotency.Response{Status: 201}, err
	})
	if !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("InTx with a lost lease: %v, want ErrLeaseLost", err)
	}
	if n := count(); n != 2 {
		t.Errorf("%d charges, want 2 (the fenced-out one rolled back)", n)
	}
}

// A holder that dies keeps its key for its lease; then 100 concurrent
// retries run the handler once.
func TestRerunAfterLease(t *testing.T) {
	s, _ := newStore(t, newPool(t))
	storetest.RerunAfterLease(t, s, time.Second, 100)
}

// With PostgreSQL unreachable (nothing listens on the port), the
// middleware fails closed.
func TestUnreachableFailsClosed(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://postgres@127.0.0.1:1/test?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	storetest.FailsClosed(t, unherdpg.NewStore(pool, unherdpg.StoreConfig{}))
}

// Connect reports a database that cannot be reached (nothing listens on
// the port) at once, and leaves no pool open.
func TestConnectUnreachable(t *testing.T) {
	cfg, err := unherdpg.PoolConfig("postgres://postgres@127.0.0.1:1/test?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := unherdpg.Connect(t.Context(), cfg)
	if err == nil || pool != nil {
		t.Fatalf("Connect to a closed port: pool %v, error %v; want no pool and an error", pool, err)
	}
	if !strings.HasPrefix(err.Error(), "unherdpg: connecting to the database: ") {
		t.Errorf("error %q does not say what failed", err)
	}
}

// BenchmarkMiddlewarePostgreSQL is a first request with a new key (claim
// and complete, two round trips) through the middleware on the test
// PostgreSQL.
func BenchmarkMiddlewarePostgreSQL(b *testing.B) {
	s, _ := newStore(b, newPool(b))
	storetest.BenchmarkNewKeys(b, s)
}

// An attacker's requests through the middleware on PostgreSQL: no caller
// reads another's response, no secret is stored, no differing request
// replays.
func TestStoreHostile(t *testing.T) {
	s, _ := newStore(t, newPool(t))
	storetest.Hostile(t, s)
}

// A claim whose caller's deadline passes while the database is slow to
// answer (here: the key's row locked by another transaction) returns at
// the deadline with its token, keeps its connection (no reconnection, no
// cancel request), and, when it takes effect afterwards, is released by
// the store, so the key is free again.
func TestClaimPastCallerDeadline(t *testing.T) {
	pool := newPoolOf(t, 2)
	admin := newPool(t)
	schema := newSchema(t, admin)
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema})
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	warmUp(t, pool, 2) // open both connections
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
	released := await.Until(5*time.Second, 20*time.Millisecond, func() bool {
		c, err = s.Claim(ctx, "k", idempotency.Fingerprint{}, time.Minute)
		return err != nil || c.State == idempotency.Acquired
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case !released:
		t.Fatalf("key still %v 5s after the abandoned claim could take effect; want it released", c.State)
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
	cfg, err = unherdpg.PoolConfig(services.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	pool := newPoolFrom(t, cfg)
	if err := pool.Ping(context.Background()); err != nil {
		t.Errorf("a pool from PoolConfig: %v", err)
	}
}

// A principal the database could not store as text (a NUL byte, invalid
// UTF-8) is protected like any other: the first request runs, its retry
// is replayed, and with FailOpen the handler is never run unprotected.
func TestHostilePrincipal(t *testing.T) {
	s, _ := newStore(t, newPool(t))
	for _, p := range []string{"a\x00b", "\xff\xfe", "\x00", "caf\xc3"} {
		t.Run(strings.ToValidUTF8(p, "?"), func(t *testing.T) {
			var runs atomic.Int32
			var errs []error
			m, err := idempotency.New(idempotency.Config{
				Store: s, FailOpen: true,
				Principal: func(*http.Request) string { return p },
				OnError:   func(_ *http.Request, err error) { errs = append(errs, err) },
			})
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.WriteHeader(http.StatusCreated)
			}))
			for i := range 2 {
				r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
				r.Header.Set(idempotency.KeyHeader, "k1")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					t.Fatalf("request %d: %d %s", i, w.Code, w.Body)
				}
				if replayed := w.Header().Get(idempotency.ReplayedHeader) == "true"; replayed != (i == 1) {
					t.Errorf("request %d: replayed %v, want %v", i, replayed, i == 1)
				}
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the handler ran %d times for one key and its retry, want 1", n)
			}
			if len(errs) > 0 {
				t.Errorf("store errors: %v", errs)
			}
			// The store itself takes the raw key too.
			if _, err := s.Claim(context.Background(), p+"\x00key", idempotency.Fingerprint{}, testLease); err != nil {
				t.Errorf("Claim of a key with NUL and invalid UTF-8: %v", err)
			}
		})
	}
}
