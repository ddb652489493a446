package unherdpg

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// DefaultTable is the table a Store keeps its records in.
const DefaultTable = "unherd_idempotency"

// DefaultTxTimeout bounds a transaction InTx runs, from the moment it
// asks for a connection to its commit: as long as DefaultOpTimeout, so
// that a transaction on a connection that went silent gives its
// connection up no later than a claim's statement on one would.
const DefaultTxTimeout = DefaultOpTimeout

// DefaultOpTimeout bounds each of a Store's claims, renewals, completions
// and releases, and each batch of deletions of expired records.
const DefaultOpTimeout = 5 * time.Second

// DefaultDeleteBatch is how many expired records one DELETE statement of
// DeleteExpired or RunJanitor removes at most: a statement of a few
// milliseconds that locks a thousand rows, never the millions a backlog
// may hold.
const DefaultDeleteBatch = 1000

// StoreConfig configures a [Store]. The zero value uses DefaultTable in
// the connection's search path, bounds InTx's transactions by
// DefaultTxTimeout and the record's statements by DefaultOpTimeout, and
// keeps a quarter of the pool's connections for the
// records.
type StoreConfig struct {
	// Schema, if set, qualifies Table.
	Schema string
	// Table names the table. Zero means DefaultTable.
	Table string

	// TxTimeout bounds each transaction InTx runs, from the moment it
	// asks for a connection to its commit, on the client (the context fn
	// receives) and on the server (statement_timeout and
	// idle_in_transaction_session_timeout, set for the transaction): a
	// transaction stuck on a dead connection is abandoned and rolled
	// back, whatever the handler's context, instead of holding its
	// connection and the record's row. A statement on a connection that
	// went silent cannot be told from one the server is still running,
	// so size it for the longest transaction the handlers run, not more:
	// it is how long a transaction can hang, and a request with it. Keep
	// it below the middleware's Lease. Zero means DefaultTxTimeout.
	TxTimeout time.Duration

	// OpTimeout bounds the statements of each claim, renewal,
	// completion and release. The caller's context bounds the wait for
	// a connection and for the answer, but a statement once sent runs to
	// its end, or to OpTimeout, whatever that context: interrupting it
	// would cost its connection (pgx closes it and sends the server a
	// cancel request on another), the dearest thing to a server slowed
	// down by load, and leave its outcome unknown. A statement sent on a
	// connection whose server vanished without a reset fails when
	// OpTimeout passes, and the connection leaves the pool at once.
	// Keep it above the middleware's StoreTimeout. Zero means
	// DefaultOpTimeout.
	OpTimeout time.Duration

	// ReservedConns is how many of the pool's connections InTx leaves to
	// the records: InTx runs at most MaxConns - ReservedConns
	// transactions at once, so that claims, renewals, completions and
	// releases never wait behind the handlers' transactions. Zero means
	// a quarter of the pool's MaxConns, at least 1; it is capped at
	// MaxConns - 1. Statements the handler sends on the pool outside
	// InTx are not counted: give them a pool of their own.
	ReservedConns int32

	// DeleteBatch is how many expired records one statement of
	// DeleteExpired and RunJanitor deletes at most; they repeat it until
	// a statement finds fewer, each statement a transaction of its own,
	// so that no statement locks more rows than this. Zero means
	// DefaultDeleteBatch.
	DeleteBatch int
}

// Store is an idempotency.Store on PostgreSQL, shared by every process
// that uses the same table. Create the table with EnsureSchema, or apply
// SchemaSQL as a migration of your own.
//
// A record's key is the SHA-256 of the store key (the principal and the
// client's key), kept as bytea: the client's key is not stored in clear,
// and no key or principal, whatever bytes it holds, reaches the database
// as text it could reject.
//
// A claim is one INSERT ... ON CONFLICT DO NOTHING that also reads the
// existing record, so of concurrent claims exactly one acquires the key;
// a row whose lease or TTL has passed is taken over by a conditional
// UPDATE. A first request costs two round trips (claim, completion), a
// replay one, a takeover of an expired record one more. Times are the
// database server's now(). Fencing tokens are random 64-bit numbers.
//
// Expired rows are taken over when their key is claimed again; the rest
// stay in the table until deleted. RunJanitor deletes them periodically,
// in bounded batches, which keeps the table to about the records of one
// TTL; DeleteExpired deletes them once, for a job of your own.
//
// It is safe for concurrent use.
type Store struct {
	pool      *pgxpool.Pool
	table     string // quoted, qualified
	txTimeout time.Duration
	opTimeout time.Duration
	txSlots   chan struct{} // one per transaction InTx may run at once
	beginSQL  string
	batch     int
	// releases retries the release of a claim whose caller gave up.
	releases *retry.Policy

	claimSQL, takeoverSQL, selectSQL, renewSQL, completeSQL, releaseSQL, expiredSQL string
}

// NewStore returns a Store that keeps its records in pool's database.
func NewStore(pool *pgxpool.Pool, cfg StoreConfig) *Store {
	id := pgx.Identifier{cmp.Or(cfg.Table, DefaultTable)}
	if cfg.Schema != "" {
		id = pgx.Identifier{cfg.Schema, id[0]}
	}
	t := id.Sanitize()
	maxConns := pool.Config().MaxConns
	reserved := cfg.ReservedConns
	if reserved <= 0 {
		reserved = max(maxConns/4, 1)
	}
	reserved = min(reserved, maxConns-1)
	txTimeout := cmp.Or(cfg.TxTimeout, DefaultTxTimeout)
	opTimeout := cmp.Or(cfg.OpTimeout, DefaultOpTimeout)
	return &Store{
		batch:     cmp.Or(max(cfg.DeleteBatch, 0), DefaultDeleteBatch),
		releases:  releasePolicy(),
		pool:      pool,
		table:     t,
		txTimeout: txTimeout,
		opTimeout: opTimeout,
		txSlots:   make(chan struct{}, max(maxConns-reserved, 1)),
		beginSQL: fmt.Sprintf("BEGIN; SET LOCAL statement_timeout = %d; SET LOCAL idle_in_transaction_session_timeout = %d",
			ms(txTimeout), ms(txTimeout)),
		// The CTE inserts the record, or reads the existing one in the
		// same round trip; DO NOTHING takes no lock on an existing row, so
		// duplicates do not queue behind each other. A row committed by a
		// concurrent claim after the statement's snapshot shows in neither
		// half, and Claim reads it with selectSQL; an expired row is taken
		// over with takeoverSQL.
		claimSQL: `WITH ins AS (
	INSERT INTO ` + t + ` (key, token, state, fingerprint, response, expires_at)
	VALUES ($1, $2, 1, $3, NULL, now() + $4 * interval '1 millisecond')
	ON CONFLICT (key) DO NOTHING
	RETURNING 0::smallint AS state)
SELECT state, NULL::bytea, NULL::bytea, true FROM ins
UNION ALL
SELECT state, fingerprint, response, expires_at > now() FROM ` + t + ` WHERE key = $1 AND NOT EXISTS (SELECT FROM ins)`,
		takeoverSQL: `UPDATE ` + t + ` SET token = $2, state = 1, fingerprint = $3, response = NULL, expires_at = now() + $4 * interval '1 millisecond' WHERE key = $1 AND expires_at <= now()`,
		selectSQL:   `SELECT state, fingerprint, response, expires_at > now() FROM ` + t + ` WHERE key = $1`,
		renewSQL:    `UPDATE ` + t + ` SET expires_at = now() + $3 * interval '1 millisecond' WHERE key = $1 AND token = $2 AND state = 1 AND expires_at > now()`,
		completeSQL: `UPDATE ` + t + ` SET state = 2, response = $3, expires_at = now() + $4 * interval '1 millisecond' WHERE key = $1 AND token = $2 AND expires_at > now()`,
		releaseSQL:  `DELETE FROM ` + t + ` WHERE key = $1 AND token = $2 AND state = 1 AND expires_at > now()`,
		// SKIP LOCKED: janitors of several processes share the work
		// instead of queueing on each other's rows, and a row a claim is
		// taking over is left to it.
		expiredSQL: `DELETE FROM ` + t + ` WHERE ctid IN (
	SELECT ctid FROM ` + t + ` WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)
AND expires_at <= now()`,
	}
}

// SchemaSQL returns the statements that create the Store's table and
// index if they do not exist, for a migration tool.
//
// A table created by an earlier version, whose key column is text (the
// store key in clear), is converted in place: each key is replaced by its
// SHA-256, so its records stay valid. The conversion rewrites the table
// under an exclusive lock; on a large table, run it at a quiet time.
func (s *Store) SchemaSQL() string {
	idx := pgx.Identifier{strings.Trim(s.table[strings.LastIndex(s.table, ".")+1:], `"`) + "_expires_at"}.Sanitize()
	lit := "'" + strings.ReplaceAll(s.table, "'", "''") + "'"
	return `CREATE TABLE IF NOT EXISTS ` + s.table + ` (
	key         bytea       PRIMARY KEY, -- SHA-256 of the store key
	token       bigint      NOT NULL,
	state       smallint    NOT NULL, -- 1 in flight, 2 completed
	fingerprint bytea       NOT NULL,
	response    bytea,                -- idempotency.Response.MarshalBinary
	expires_at  timestamptz NOT NULL  -- the lease's end in flight, the TTL's once completed
);
CREATE INDEX IF NOT EXISTS ` + idx + ` ON ` + s.table + ` (expires_at);
DO $unherd$ BEGIN
	IF (SELECT atttypid = 'text'::regtype FROM pg_attribute WHERE attrelid = to_regclass(` + lit + `) AND attname = 'key') THEN
		ALTER TABLE ` + s.table + ` ALTER COLUMN key TYPE bytea USING sha256(convert_to(key, 'UTF8'));
	END IF;
END $unherd$;`
}

// EnsureSchema creates the table and its index if they do not exist.
func (s *Store) EnsureSchema(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, s.SchemaSQL()); err != nil {
		return fmt.Errorf("unherdpg: creating %s: %w", s.table, err)
	}
	return nil
}

// DeleteExpired deletes the records whose lease or TTL has passed and
// returns how many it deleted. It deletes them in batches of
// StoreConfig.DeleteBatch rows, each one statement and one transaction,
// until a batch finds fewer, so that no statement holds the locks of a
// large backlog. As the Store's other statements, each runs to its end
// or to OpTimeout whatever ctx; when ctx ends, DeleteExpired returns at
// once, with what the batches before deleted and ctx's error, and
// starts no other batch. RunJanitor calls it periodically.
func (s *Store) DeleteExpired(ctx context.Context) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.detached(ctx, "deleting expired records", func(ctx context.Context, conn *pgxpool.Conn) error {
			tag, err := conn.Exec(ctx, s.expiredSQL, s.batch)
			n = tag.RowsAffected()
			return err
		}, nil)
		total += n
		if err != nil || n < int64(s.batch) {
			return total, err
		}
	}
}

func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// recordKey is the value of a record's key column: the SHA-256 of key.
func recordKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// Claim implements idempotency.Store. When it fails after a statement
// was sent, the Claim it returns carries the token it drew, which owns
// the record if the statement took effect.
//
// The claim's statements run to their end whatever ctx, bounded by
// StoreConfig.OpTimeout; when ctx ends first, Claim returns ctx's error
// with the token at once, and a claim that takes effect afterwards is
// released by the Store itself.
func (s *Store) Claim(ctx context.Context, key string, fp idempotency.Fingerprint, lease time.Duration) (idempotency.Claim, error) {
	tok := idempotency.NewToken()
	rk := recordKey(key)
	var c idempotency.Claim
	err := s.detached(ctx, "claim", func(ctx context.Context, conn *pgxpool.Conn) (err error) {
		c, err = s.claim(ctx, conn, rk, tok, fp, lease)
		return err
	}, func(err error) {
		// The caller gave up on the claim: undo it if it took effect, or
		// may have.
		if (err == nil && c.State == idempotency.Acquired) || (err != nil && unknown(tok, err).Token != 0) {
			s.releaseAbandoned(rk, tok)
		}
	})
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, errNotSent):
		return idempotency.Claim{}, err
	}
	return unknown(tok, err), err
}

// put returns conn to the pool, or takes it out of the pool if it is
// closed: pgx closes a connection whose statement failed on its deadline
// in the background, sending the server a cancel request on a new
// connection, and the pool would hold the closed connection's place
// until that ends, up to 15 s (for as long as the server is unreachable).
func (s *Store) put(conn *pgxpool.Conn) {
	if conn.Conn().IsClosed() {
		_ = conn.Hijack()
		return
	}
	conn.Release()
}

// errNotSent marks an error of detached's returned before a statement was
// sent.
var errNotSent = errors.New("no statement was sent")

// claim runs Claim's statements on conn.
func (s *Store) claim(ctx context.Context, conn *pgxpool.Conn, rk []byte, tok uint64, fp idempotency.Fingerprint, lease time.Duration) (idempotency.Claim, error) {
	for range 3 {
		var (
			state    int16
			fpv, rsp []byte
			live     bool
		)
		err := conn.QueryRow(ctx, s.claimSQL, rk, int64(tok), fp[:], ms(lease)).Scan(&state, &fpv, &rsp, &live)
		if errors.Is(err, pgx.ErrNoRows) {
			// A concurrent claim committed after this statement began.
			err = conn.QueryRow(ctx, s.selectSQL, rk).Scan(&state, &fpv, &rsp, &live)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // and its record is gone again: start over
			}
		}
		if err != nil {
			return idempotency.Claim{}, err
		}
		if live {
			return decodeClaim(state, fpv, rsp, tok)
		}
		tag, err := conn.Exec(ctx, s.takeoverSQL, rk, int64(tok), fp[:], ms(lease))
		if err != nil {
			return idempotency.Claim{}, err
		}
		if tag.RowsAffected() == 1 {
			return idempotency.Claim{State: idempotency.Acquired, Token: tok}, nil
		}
		// Another claim took the expired record over first: look again.
	}
	// The record keeps changing under this claim; report it in flight,
	// the answer that runs nothing.
	return idempotency.Claim{State: idempotency.InFlight, Fingerprint: fp}, nil
}

// releasePolicy returns how a Store releases a claim its caller gave up
// on while the database fails: up to 5 tries at growing intervals from
// 100 ms with equal jitter (stores that failed together do not retry
// together), stopping at an error that says the statement itself is
// wrong. The Policy's own retry budget, one per Store, stops the retries
// of a Store whose releases keep failing (a database that is down), so
// that they do not add to its load; an unreleased claim then holds its
// key until its lease ends.
func releasePolicy() *retry.Policy {
	p, err := retry.New(retry.Config{
		MaxAttempts:       5,
		Backoff:           backoff.Schedule{Base: 100 * time.Millisecond, Jitter: backoff.Equal},
		Classify:          classify,
		OnBudgetExhausted: retry.ReturnAtOnce,
	})
	if err != nil {
		panic("unherdpg: the release policy is invalid: " + err.Error()) // unreachable: the config is a constant that validates
	}
	return p
}

// classify is DefaultClassify, but for the errors of the database that
// say the statement will fail again (an undefined table, a privilege, a
// bad value): those of the classes other than connection exceptions
// (08), transaction rollbacks (40: serialization failures, deadlocks),
// insufficient resources (53), operator intervention (57: a statement
// timeout, a shutdown) and system errors (58) are permanent.
func classify(err error) failure.Class {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && len(pgErr.Code) == 5 {
		switch pgErr.Code[:2] {
		case "08", "40", "53", "57", "58":
			return failure.Transient
		}
		return failure.Permanent
	}
	return engine.DefaultClassify(err)
}

// releaseAbandoned releases, by its token, a claim whose caller gave up
// before it took effect. A release that finds no record to release (the
// claim never took effect, or its lease is over) succeeds: there is
// nothing more to do.
func (s *Store) releaseAbandoned(rk []byte, tok uint64) {
	_ = s.releases.Do(context.Background(), func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, s.opTimeout)
		defer cancel()
		_, err := s.pool.Exec(ctx, s.releaseSQL, rk, int64(tok))
		return err
	})
}

// detached acquires a connection within ctx and runs fn on it, bounded
// by OpTimeout but not by ctx: a statement interrupted by its context
// costs its connection (pgx closes it, and sends the server a cancel
// request on a connection of its own), which a server slowed down by load
// can least afford, and its outcome is then unknown. When ctx ends before
// fn returns, detached returns ctx's error at once and, when fn returns,
// calls abandoned with fn's error. A connection fn leaves closed (its
// statement outlived OpTimeout: the connection is dead or the server
// hangs) leaves the pool at once (see put).
func (s *Store) detached(ctx context.Context, op string, fn func(context.Context, *pgxpool.Conn) error, abandoned func(error)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("unherdpg: %s: %w: %w", op, errNotSent, err)
	}
	if err := ctx.Err(); err != nil {
		conn.Release()
		return fmt.Errorf("unherdpg: %s: %w: %w", op, errNotSent, context.Cause(ctx))
	}
	done := make(chan error, 1)
	go func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opTimeout)
		defer cancel()
		err := fn(fctx, conn)
		s.put(conn)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("unherdpg: %s: %w", op, err)
		}
		return nil
	case <-ctx.Done():
		if abandoned != nil {
			go func() { abandoned(<-done) }()
		}
		return fmt.Errorf("unherdpg: %s: %w", op, context.Cause(ctx))
	}
}

// unknown is the Claim returned with err: the token, unless err says the
// statement was never sent.
func unknown(tok uint64, err error) idempotency.Claim {
	if pgconn.SafeToRetry(err) {
		return idempotency.Claim{}
	}
	return idempotency.Claim{Token: tok}
}

func decodeClaim(state int16, fpv, rsp []byte, tok uint64) (idempotency.Claim, error) {
	var c idempotency.Claim
	switch state {
	case 0:
		return idempotency.Claim{State: idempotency.Acquired, Token: tok}, nil
	case 1:
		c.State = idempotency.InFlight
	case 2:
		c.State = idempotency.Completed
		c.Response = new(idempotency.Response)
		if err := c.Response.UnmarshalBinary(rsp); err != nil {
			return idempotency.Claim{}, err
		}
	default:
		return c, fmt.Errorf("%w: state %d", idempotency.ErrBadRecord, state)
	}
	copy(c.Fingerprint[:], fpv)
	return c, nil
}

// fenced runs a statement fenced by a record's token, detached from
// ctx, and returns idempotency.ErrLeaseLost if it changed no row.
func (s *Store) fenced(ctx context.Context, op, sql string, args ...any) error {
	var tag pgconn.CommandTag
	err := s.detached(ctx, op, func(ctx context.Context, conn *pgxpool.Conn) (err error) {
		tag, err = conn.Exec(ctx, sql, args...)
		return err
	}, nil)
	switch {
	case err != nil:
		return err
	case tag.RowsAffected() == 0:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Renew implements idempotency.Store.
func (s *Store) Renew(ctx context.Context, key string, token uint64, lease time.Duration) error {
	return s.fenced(ctx, "renew", s.renewSQL, recordKey(key), int64(token), ms(lease))
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key string, token uint64, resp *idempotency.Response, ttl time.Duration) error {
	data, err := resp.MarshalBinary()
	if err != nil {
		return err
	}
	return s.fenced(ctx, "complete", s.completeSQL, recordKey(key), int64(token), data, ms(ttl))
}

// completeTx completes the record in tx.
func (s *Store) completeTx(ctx context.Context, tx pgx.Tx, key string, token uint64, resp *idempotency.Response, ttl time.Duration) error {
	data, err := resp.MarshalBinary()
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, s.completeSQL, recordKey(key), int64(token), data, ms(ttl))
	switch {
	case err != nil:
		return fmt.Errorf("unherdpg: complete: %w", err)
	case tag.RowsAffected() == 0:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key string, token uint64) error {
	return s.fenced(ctx, "release", s.releaseSQL, recordKey(key), int64(token))
}

var _ idempotency.Store = (*Store)(nil)
