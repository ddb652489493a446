package unherdpg

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/unherd/unherd/idempotency"
)

// ErrNoResponse is returned by InTx when fn returns neither a response
// nor an error.
var ErrNoResponse = errors.New("unherdpg: transaction function returned no response")

// rollbackTimeout bounds the rollback of a transaction InTx abandons.
const rollbackTimeout = time.Second

// InTx runs fn in a transaction on the Store's pool and commits it, so
// that a handler's side effects and its idempotency record are durable
// together or not at all: the effect happens exactly once even if the
// process dies between the commit and the reply, because the retry finds
// the record completed and replays it.
//
// When ctx carries the middleware's lease (idempotency.LeaseFromContext),
// the response fn returns completes the record inside the transaction,
// fenced by the lease's token: if another request took the key over after
// this one's lease expired, the transaction is rolled back with
// idempotency.ErrLeaseLost and fn's effects are undone. The lease is then
// marked completed, so the middleware does not complete it again. The
// handler writes the returned response with Response.Send.
//
// fn's error, or a 5xx response, rolls the transaction back (the
// middleware then releases the key so that a retry runs again); InTx
// returns the error, or the 5xx response with a nil error. Without a
// lease in ctx, InTx is a plain transaction.
//
// The transaction is bounded by StoreConfig.TxTimeout whatever ctx's own
// deadline (a handler may pass a context.WithoutCancel so that a charge is
// not abandoned when its client hangs up), and waits for one of the pool's
// connections InTx may take (StoreConfig.ReservedConns) within that bound:
// past it, InTx rolls back and returns an error wrapping
// context.DeadlineExceeded.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error)) (*idempotency.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.txTimeout)
	defer cancel()
	select {
	case s.txSlots <- struct{}{}:
		defer func() { <-s.txSlots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("unherdpg: begin: waiting for a connection: %w", context.Cause(ctx))
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("unherdpg: begin: %w", err)
	}
	defer s.put(conn)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: s.beginSQL})
	if err != nil {
		return nil, fmt.Errorf("unherdpg: begin: %w", err)
	}
	defer func() {
		// A no-op after Commit. Bounded, though ctx may be done: a
		// rollback that cannot reach the server closes the connection,
		// and the server rolls back when it sees it go.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	resp, err := fn(ctx, tx)
	switch {
	case err != nil:
		return nil, err
	case resp == nil:
		return nil, ErrNoResponse
	case resp.Status >= http.StatusInternalServerError:
		return resp, nil
	}
	lease, ok := idempotency.LeaseFromContext(ctx)
	if ok {
		if err := s.completeTx(ctx, tx, lease.Key, lease.Token, lease.Stored(resp), lease.TTL); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("unherdpg: commit: %w", err)
	}
	if ok {
		lease.MarkCompleted()
	}
	return resp, nil
}
