package unherdpg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/idempotency"
)

// DefaultTable is the table a Store keeps its records in.
const DefaultTable = "unherd_idempotency"

// StoreConfig configures a [Store]. The zero value uses DefaultTable in
// the connection's search path.
type StoreConfig struct {
	// Schema, if set, qualifies Table.
	Schema string
	// Table names the table. Zero means DefaultTable.
	Table string
}

// Store is an idempotency.Store on PostgreSQL, shared by every process
// that uses the same table. Create the table with EnsureSchema, or apply
// SchemaSQL as a migration of your own.
//
// A claim is one INSERT ... ON CONFLICT DO NOTHING that also reads the
// existing record, so of concurrent claims exactly one acquires the key;
// a row whose lease or TTL has passed is taken over by a conditional
// UPDATE. A first request costs two round trips (claim, completion), a
// replay one, a takeover of an expired record one more. Times are the database server's now(). Fencing tokens are
// random 64-bit numbers. Expired rows are taken over when their key is
// claimed again; DeleteExpired removes the rest, for a periodic job.
//
// It is safe for concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	table string // quoted, qualified

	claimSQL, takeoverSQL, selectSQL, renewSQL, completeSQL, releaseSQL, expiredSQL string
}

// NewStore returns a Store that keeps its records in pool's database.
func NewStore(pool *pgxpool.Pool, cfg StoreConfig) *Store {
	id := pgx.Identifier{cmp.Or(cfg.Table, DefaultTable)}
	if cfg.Schema != "" {
		id = pgx.Identifier{cfg.Schema, id[0]}
	}
	t := id.Sanitize()
	return &Store{
		pool:  pool,
		table: t,
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
		expiredSQL:  `DELETE FROM ` + t + ` WHERE expires_at <= now()`,
	}
}

// SchemaSQL returns the statements that create the Store's table and
// index if they do not exist, for a migration tool.
func (s *Store) SchemaSQL() string {
	idx := pgx.Identifier{strings.Trim(s.table[strings.LastIndex(s.table, ".")+1:], `"`) + "_expires_at"}.Sanitize()
	return `CREATE TABLE IF NOT EXISTS ` + s.table + ` (
	key         text        PRIMARY KEY,
	token       bigint      NOT NULL,
	state       smallint    NOT NULL, -- 1 in flight, 2 completed
	fingerprint bytea       NOT NULL,
	response    bytea,                -- idempotency.Response.MarshalBinary
	expires_at  timestamptz NOT NULL  -- the lease's end in flight, the TTL's once completed
);
CREATE INDEX IF NOT EXISTS ` + idx + ` ON ` + s.table + ` (expires_at);`
}

// EnsureSchema creates the table and its index if they do not exist.
func (s *Store) EnsureSchema(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, s.SchemaSQL()); err != nil {
		return fmt.Errorf("unherdpg: creating %s: %w", s.table, err)
	}
	return nil
}

// DeleteExpired deletes the records whose lease or TTL has passed and
// returns how many it deleted.
func (s *Store) DeleteExpired(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.expiredSQL)
	if err != nil {
		return 0, fmt.Errorf("unherdpg: deleting expired records: %w", err)
	}
	return tag.RowsAffected(), nil
}

func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, key string, fp idempotency.Fingerprint, lease time.Duration) (idempotency.Claim, error) {
	tok := idempotency.NewToken()
	for range 3 {
		var (
			state    int16
			fpv, rsp []byte
			live     bool
		)
		err := s.pool.QueryRow(ctx, s.claimSQL, key, int64(tok), fp[:], ms(lease)).Scan(&state, &fpv, &rsp, &live)
		if errors.Is(err, pgx.ErrNoRows) {
			// A concurrent claim committed after this statement began.
			err = s.pool.QueryRow(ctx, s.selectSQL, key).Scan(&state, &fpv, &rsp, &live)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // and its record is gone again: start over
			}
		}
		if err != nil {
			return idempotency.Claim{}, fmt.Errorf("unherdpg: claim: %w", err)
		}
		if live {
			return decodeClaim(state, fpv, rsp, tok)
		}
		tag, err := s.pool.Exec(ctx, s.takeoverSQL, key, int64(tok), fp[:], ms(lease))
		if err != nil {
			return idempotency.Claim{}, fmt.Errorf("unherdpg: claim: %w", err)
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

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func fenced(tag pgconn.CommandTag, err error, op string) error {
	switch {
	case err != nil:
		return fmt.Errorf("unherdpg: %s: %w", op, err)
	case tag.RowsAffected() == 0:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Renew implements idempotency.Store.
func (s *Store) Renew(ctx context.Context, key string, token uint64, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, s.renewSQL, key, int64(token), ms(lease))
	return fenced(tag, err, "renew")
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key string, token uint64, resp *idempotency.Response, ttl time.Duration) error {
	return s.complete(ctx, s.pool, key, token, resp, ttl)
}

func (s *Store) complete(ctx context.Context, db execer, key string, token uint64, resp *idempotency.Response, ttl time.Duration) error {
	data, err := resp.MarshalBinary()
	if err != nil {
		return err
	}
	tag, err := db.Exec(ctx, s.completeSQL, key, int64(token), data, ms(ttl))
	return fenced(tag, err, "complete")
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key string, token uint64) error {
	tag, err := s.pool.Exec(ctx, s.releaseSQL, key, int64(token))
	return fenced(tag, err, "release")
}

var _ idempotency.Store = (*Store)(nil)
