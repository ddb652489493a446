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
package unherdpg
