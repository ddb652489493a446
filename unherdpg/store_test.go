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
