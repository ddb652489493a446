// Package unherdpg keeps idempotency records in PostgreSQL, through pgx
// v5, and lets a handler commit its side effects and its record in one
// transaction.
//
// Create the table once (or apply SchemaSQL as a migration), give the
// Store to the middleware, and run the handler's writes in InTx:
//
//	store := unherdpg.NewStore(pool, unherdpg.StoreConfig{})
//	if err := store.EnsureSchema(ctx); err != nil { ... }
//	m, err := idempotency.New(idempotency.Config{Store: store, Required: true})
//	mux.Handle("POST /charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		resp, err := store.InTx(r.Context(), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
//			if _, err := tx.Exec(ctx, `INSERT INTO charges ...`); err != nil {
//				return nil, err
//			}
//			return &idempotency.Response{Status: http.StatusCreated, Body: body}, nil
//		})
//		if err != nil { ... 503 ... }
//		resp.Send(w)
//	})))
//
// With InTx the charge row and the completed record commit together: a
// process that dies after the commit leaves a record the retry replays,
// and one that dies before it leaves neither, so the retry charges once.
// Without InTx, the middleware completes the record after the handler
// returns, in a transaction of its own; a crash between the two is
// covered by the lease only (the retry runs the handler again).
//
// What an operator sizes and watches:
//
//   - The pool. Claims, renewals, completions and releases are short
//     statements; InTx transactions last as long as the handler's writes.
//     InTx never takes the last StoreConfig.ReservedConns connections of
//     the pool (a quarter of MaxConns by default), so the middleware's own
//     statements never wait behind handler transactions: size MaxConns
//     for the handlers' concurrency plus that reserve.
//   - The transaction bound. StoreConfig.TxTimeout (DefaultTxTimeout)
//     bounds every InTx transaction from asking for a connection to its
//     commit, on the client and on the server (statement_timeout and
//     idle_in_transaction_session_timeout), even when the handler's
//     context is never cancelled: a transaction stuck on a dead connection
//     ends and its connection is replaced.
//   - The lease (idempotency.Config.Lease) and the middleware's
//     StoreTimeout: a record whose handler died is taken over after the
//     lease; a store slower than StoreTimeout answers 503.
//
// Keys reach the database as the SHA-256 of the store key, as bytea, so
// no key or principal can be refused by the database as text; SchemaSQL
// converts a table of an earlier, text-keyed version in place.
package unherdpg
