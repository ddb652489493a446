package unherdpg_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/unherdpg"
)

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
	cfg, err := pgxpool.ParseConfig(dsn())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool := newPoolFrom(t, cfg)
	schema := newSchema(t, newPool(t))
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema, TxTimeout: time.Minute})
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(hold)
	for range 8 { // more than the pool has
		wg.Go(func() {
			_, _ = s.InTx(context.Background(), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
				<-hold
				return nil, errors.New("held")
			})
		})
	}
	time.Sleep(200 * time.Millisecond) // let the transactions take what they may
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := s.Claim(ctx, fmt.Sprint("k", i), idempotency.Fingerprint{}, time.Minute)
		cancel()
		if err != nil {
			t.Fatalf("claim %d while transactions hold the pool: %v", i, err)
		}
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
