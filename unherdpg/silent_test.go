package unherdpg_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/services"
	"github.com/unherd/unherd/unherdpg"
)

// silencer dials connections it can silence: every byte written to a
// silenced connection is dropped and nothing more is read from it, as
// when the server's host or the network to it dies without a reset.
// Connections dialed afterwards work.
type silencer struct {
	mu    sync.Mutex
	conns []*silentConn
}

func (s *silencer) wrap(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc := &silentConn{Conn: c}
		s.mu.Lock()
		s.conns = append(s.conns, sc)
		s.mu.Unlock()
		return sc, nil
	}
}

// silence silences every connection dialed so far and returns how many.
func (s *silencer) silence() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.silent.Store(true)
	}
	return len(s.conns)
}

// open returns how many silenced connections are not closed yet.
func (s *silencer) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.conns {
		if c.silent.Load() && !c.closed.Load() {
			n++
		}
	}
	return n
}

type silentConn struct {
	net.Conn
	silent, closed atomic.Bool
}

func (c *silentConn) Write(b []byte) (int, error) {
	if c.silent.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *silentConn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		if err != nil || !c.silent.Load() {
			return n, err
		}
		// Silenced: what the server sends is lost; wait for the
		// deadline the client set, or the close.
	}
}

func (c *silentConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// Connections that go silent (a blackhole: no reset, no answer) are
// found and replaced within the store's bounds: the transaction on one
// fails within TxTimeout though its handler's context never ends, the
// claims sent on the others fail their callers at their deadline and
// give their connections up within OpTimeout, and claims succeed again
// on new connections, with none of the silent ones left open.
func TestSilentConnectionsReplaced(t *testing.T) {
	const bound = 500 * time.Millisecond // TxTimeout and OpTimeout
	cfg, err := unherdpg.PoolConfig(services.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	var sl silencer
	cfg.ConnConfig.DialFunc = sl.wrap(cfg.ConnConfig.DialFunc)
	pool := newPoolFrom(t, cfg)
	schema := newSchema(t, newPool(t))
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema, TxTimeout: bound, OpTimeout: bound, ReservedConns: 1})
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	warmUp(t, pool, int(cfg.MaxConns)) // open all the pool's connections

	// The transaction's connection, and every other, go silent while it
	// runs.
	start := time.Now()
	var silenced int
	_, err = s.InTx(context.WithoutCancel(ctx), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
		silenced = sl.silence()
		_, err := tx.Exec(ctx, "SELECT 1")
		return &idempotency.Response{Status: 201}, err
	})
	took := time.Since(start)
	t.Logf("%d connections silenced; the transaction on one failed after %v: %v", silenced, took.Round(time.Millisecond), err)
	if err == nil || took > bound+time.Second {
		t.Errorf("InTx on a silent connection returned %v after %v; want an error within its %v TxTimeout (1s allowed beyond)", err, took, bound)
	}

	// Claims: those sent on silent connections fail at their callers'
	// deadline; the pool replaces the silent connections; claims
	// succeed again.
	start = time.Now()
	failed, ok := 0, 0
	for ok < 8 {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("claims: %d failed, %d succeeded in a row 5s after the connections went silent; want 8 in a row", failed, ok)
		}
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := s.Claim(cctx, fmt.Sprint("k", failed+ok), idempotency.Fingerprint{}, time.Minute)
		cancel()
		if err != nil {
			failed, ok = failed+1, 0
			continue
		}
		ok++
	}
	recovered := time.Since(start)
	// The last silent connections leave the pool within OpTimeout of
	// their claims' statements.
	await.Until(time.Until(start.Add(recovered+bound+time.Second)), 10*time.Millisecond, func() bool { return sl.open() == 0 })
	t.Logf("claims: %d failed, then 8 succeeded in a row %v after the connections went silent; %d silent connections open after %v",
		failed, recovered.Round(time.Millisecond), sl.open(), time.Since(start).Round(time.Millisecond))
	if recovered > 2*bound+time.Second {
		t.Errorf("claims succeeded again %v after the connections went silent; want within twice the %v OpTimeout (1s allowed beyond)", recovered, bound)
	}
	if n := sl.open(); n > 0 {
		t.Errorf("%d silent connections still open; want every one closed", n)
	}
}

// A transaction that does not end on its own is abandoned after
// TxTimeout, though the handler's context never ends.
func TestInTxBounded(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema, TxTimeout: 300 * time.Millisecond})
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(ctx context.Context, tx pgx.Tx) error{
		"a statement that runs on": func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "SELECT pg_sleep(10)")
			return err
		},
		"a handler that waits": func(ctx context.Context, tx pgx.Tx) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return errors.New("the transaction's context was not done after 10s")
			}
		},
	} {
		start := time.Now()
		_, err := s.InTx(context.WithoutCancel(context.Background()), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
			return nil, fn(ctx, tx)
		})
		took := time.Since(start)
		t.Logf("%s: abandoned after %v: %v", name, took.Round(time.Millisecond), err)
		if err == nil || took > 5*time.Second {
			t.Errorf("%s: InTx returned %v after %v; want an error within the 300ms TxTimeout (5s allowed)", name, err, took)
		}
	}
}

// Transactions that hold every connection InTx may take leave the
// reserved ones to claims, which answer at once.
func TestClaimsNotStarvedByTransactions(t *testing.T) {
	pool := newPoolOf(t, 4)
	schema := newSchema(t, newPool(t))
	// InTx runs at most 4 - 1 transactions at once.
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema, TxTimeout: time.Minute, ReservedConns: 1})
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	held := make(chan struct{}, 8)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(hold)
	for range 8 { // more than the pool has
		wg.Go(func() {
			_, _ = s.InTx(context.Background(), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
				held <- struct{}{}
				select {
				case <-hold: // the test has ended
				case <-time.After(time.Minute):
				}
				return nil, errors.New("held")
			})
		})
	}
	for i := range 3 {
		await.Recv(t, held, fmt.Sprintf("transaction %d of the 3 InTx allows to hold its connection", i+1))
	}
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := s.Claim(ctx, fmt.Sprint("k", i), idempotency.Fingerprint{}, time.Minute)
		cancel()
		if err != nil {
			t.Fatalf("claim %d while transactions hold the pool: %v", i, err)
		}
	}
	select {
	case <-held:
		t.Error("a fourth transaction ran: InTx took the connection reserved for claims")
	default:
	}
}

// A table made by an earlier version, keyed by the store key as text,
// is converted by EnsureSchema and keeps its records.
func TestSchemaMigratesTextKeys(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	ctx := context.Background()
	table := pgx.Identifier{schema, unherdpg.DefaultTable}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (
	key text PRIMARY KEY, token bigint NOT NULL, state smallint NOT NULL,
	fingerprint bytea NOT NULL, response bytea, expires_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	resp, _ := (&idempotency.Response{Status: 201, Body: []byte("old")}).MarshalBinary()
	fp := idempotency.Fingerprint{1}
	if _, err := pool.Exec(ctx, `INSERT INTO `+table+` VALUES ('5:alicek1', 7, 2, $1, $2, now() + interval '1 hour')`, fp[:], resp); err != nil {
		t.Fatal(err)
	}
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema})
	for range 2 {
		if err := s.EnsureSchema(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Claim(ctx, "5:alicek1", fp, time.Minute)
	if err != nil || c.State != idempotency.Completed || string(c.Response.Body) != "old" {
		t.Fatalf("the old record after the migration: %+v, %v; want it completed with its body", c, err)
	}
}
