package unherdpg_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/idempotency"
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
	cfg, err := unherdpg.PoolConfig(dsn())
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
	var warm []*pgxpool.Conn
	for range cfg.MaxConns { // open all the pool's connections
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		warm = append(warm, c)
	}
	for _, c := range warm {
		c.Release()
	}

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
	for sl.open() > 0 && time.Since(start) < recovered+bound+time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("claims: %d failed, then 8 succeeded in a row %v after the connections went silent; %d silent connections open after %v",
		failed, recovered.Round(time.Millisecond), sl.open(), time.Since(start).Round(time.Millisecond))
	if recovered > 2*bound+time.Second {
		t.Errorf("claims succeeded again %v after the connections went silent; want within twice the %v OpTimeout (1s allowed beyond)", recovered, bound)
	}
	if n := sl.open(); n > 0 {
		t.Errorf("%d silent connections still open; want every one closed", n)
	}
}
