package unherdpg_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/periodic"
	"github.com/unherd/unherd/unherdpg"
)

// deleting marks the context of a statement that deletes expired records.
type deleting struct{}

// deletes records the rows each DELETE statement removed.
type deletes struct {
	mu   sync.Mutex
	rows []int64
}

func (d *deletes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(data.SQL, "DELETE") && strings.Contains(data.SQL, "SKIP LOCKED") {
		return context.WithValue(ctx, deleting{}, true)
	}
	return ctx
}

func (d *deletes) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if ctx.Value(deleting{}) != nil && data.Err == nil {
		d.mu.Lock()
		d.rows = append(d.rows, data.CommandTag.RowsAffected())
		d.mu.Unlock()
	}
}

func (d *deletes) statements() []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int64(nil), d.rows...)
}

// tracedStore returns a Store in a schema of its own whose pool records
// the rows of every deletion of expired records, deleting batch rows at
// most per statement; an untraced pool to the same database; and the
// table's qualified name.
func tracedStore(t *testing.T, batch int) (*unherdpg.Store, *deletes, *pgxpool.Pool, string) {
	t.Helper()
	pool := newPool(t)
	_, schema := newStore(t, pool)
	cfg := pool.Config().Copy()
	d := &deletes{}
	cfg.ConnConfig.Tracer = d
	s := unherdpg.NewStore(newPoolFrom(t, cfg), unherdpg.StoreConfig{Schema: schema, DeleteBatch: batch})
	return s, d, pool, pgx.Identifier{schema, unherdpg.DefaultTable}.Sanitize()
}

// insert adds n records to table, expired or live, with keys of prefix.
func insert(t *testing.T, pool *pgxpool.Pool, table, prefix string, n int, expired bool) {
	t.Helper()
	when := "now() + interval '1 hour'"
	if expired {
		when = "now() - interval '1 second'"
	}
	_, err := pool.Exec(context.Background(), `INSERT INTO `+table+
		` SELECT sha256(convert_to($1 || i, 'UTF8')), 1, 2, '\x00', NULL, `+when+` FROM generate_series(1, $2) i`, prefix, n)
	if err != nil {
		t.Fatal(err)
	}
}

// count returns the rows of table.
func count(t *testing.T, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// DeleteExpired deletes every expired record, and only those, in
// statements of DeleteBatch rows at most, and skips a row another
// transaction holds rather than wait for it.
func TestDeleteExpiredBatches(t *testing.T) {
	s, d, pool, table := tracedStore(t, 10)
	insert(t, pool, table, "old-", 95, true)
	insert(t, pool, table, "live-", 5, false)

	// A transaction holds one expired row: the deletion passes it by.
	ctx := context.Background()
	held, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Rollback(ctx) }()
	if _, err := held.Exec(ctx, `SELECT 1 FROM `+table+` WHERE key = sha256(convert_to('old-1', 'UTF8')) FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := s.DeleteExpired(dctx)
	if err != nil || n != 94 {
		t.Fatalf("DeleteExpired = %d, %v; want 94 (95 expired, one held by another transaction)", n, err)
	}
	rows := d.statements()
	t.Logf("statements deleted %v rows", rows)
	for _, r := range rows {
		if r > 10 {
			t.Errorf("a statement deleted %d rows, over DeleteBatch (10)", r)
		}
	}
	if len(rows) != 10 {
		t.Errorf("%d statements for 94 rows in batches of 10, want 10", len(rows))
	}
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteExpired(dctx); err != nil || n != 1 {
		t.Errorf("DeleteExpired once the row is free = %d, %v; want 1", n, err)
	}
	if n := count(t, pool, table); n != 5 {
		t.Errorf("%d records left, want the 5 live ones", n)
	}
}

// The janitor deletes the expired records in batches on its schedule,
// leaves the live ones and a claim in flight, and stops when its context
// is cancelled, its goroutine gone.
func TestRunJanitor(t *testing.T) {
	s, d, pool, table := tracedStore(t, 50)
	insert(t, pool, table, "old-", 420, true)
	insert(t, pool, table, "live-", 5, false)
	c, err := s.Claim(context.Background(), "running", idempotency.Fingerprint{}, time.Hour)
	if err != nil || c.State != idempotency.Acquired {
		t.Fatalf("claim: %v %v", c.State, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type run struct {
		n   int64
		err error
	}
	runs := make(chan run, 1000) // never full: a blocked OnRun would keep RunJanitor from returning
	done := make(chan error, 1)
	go func() {
		done <- s.RunJanitor(ctx, unherdpg.JanitorConfig{
			Schedule: periodic.Schedule{Interval: 50 * time.Millisecond},
			OnRun:    func(n int64, err error) { runs <- run{n, err} },
		})
	}()
	var deleted int64
	for deleted < 420 {
		r := await.Recv(t, runs, "a run of the janitor")
		if r.err != nil {
			t.Fatalf("janitor run: %v", r.err)
		}
		deleted += r.n
	}
	// A record that expires later goes at a later run.
	insert(t, pool, table, "later-", 3, true)
	for r := await.Recv(t, runs, "a run after more records expired"); r.n == 0; r = await.Recv(t, runs, "a run after more records expired") {
	}
	cancel()
	if err := await.Recv(t, done, "RunJanitor to return after its context was cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("RunJanitor returned %v, want context.Canceled", err)
	}
	for _, r := range d.statements() {
		if r > 50 {
			t.Errorf("a statement deleted %d rows, over DeleteBatch (50)", r)
		}
	}
	if n := count(t, pool, table); n != 6 {
		t.Errorf("%d records left, want the 5 live ones and the claim in flight", n)
	}
	if c, err := s.Claim(context.Background(), "running", idempotency.Fingerprint{}, time.Hour); err != nil || c.State != idempotency.InFlight {
		t.Errorf("the claim in flight after the janitor ran: %v %v", c.State, err)
	}
}

// An invalid schedule is an error at once, before anything reaches the
// database.
func TestRunJanitorInvalidSchedule(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := unherdpg.NewStore(pool, unherdpg.StoreConfig{})
	err = s.RunJanitor(context.Background(), unherdpg.JanitorConfig{Schedule: periodic.Schedule{Interval: -time.Second}})
	if !errors.Is(err, periodic.ErrInvalid) {
		t.Errorf("RunJanitor with a negative interval: %v, want periodic.ErrInvalid", err)
	}
}
