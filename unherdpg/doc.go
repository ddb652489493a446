// Package unherdpg keeps idempotency records in PostgreSQL, through pgx
// v5, and lets a handler commit its side effects and its record in one
// transaction.
//
// Create the table once (or apply SchemaSQL as a migration), delete its
// expired records periodically, give the Store to the middleware, and run
// the handler's writes in InTx:
//
//	store := unherdpg.NewStore(pool, unherdpg.StoreConfig{})
//	if err := store.EnsureSchema(ctx); err != nil { ... }
//	go store.RunJanitor(ctx, unherdpg.JanitorConfig{}) // until ctx is cancelled
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
// The table stays bounded by the janitor: a record expires after the
// middleware's TTL (24 h), and RunJanitor deletes the expired ones every
// minute, at a random point of each minute so that a fleet's janitors
// spread out, in statements of StoreConfig.DeleteBatch rows (1000) that
// skip the rows another janitor is deleting. Every process may run one.
// Without it (or a job of your own calling DeleteExpired), an expired
// record leaves the table only when its key is claimed again, which a
// new key never is: the table grows with every request.
//
// Open the pool with PoolConfig, which sets what finds a connection that
// died silently (its server's host or the network to it gone, without a
// reset) within seconds: a connect timeout, TCP keep-alives and
// TCP_USER_TIMEOUT on the dialer, a timeout on the ping the pool sends
// before handing out a connection idle for over a second, and a short
// health check period:
//
//	cfg, err := unherdpg.PoolConfig(os.Getenv("DATABASE_URL"))
//	if err != nil { ... }
//	cfg.MaxConns = 40 // the handlers' concurrency plus the reserve, below
//	pool, err := unherdpg.Connect(ctx, cfg) // pgxpool.NewWithConfig, then a ping
//
// What an operator sizes and watches:
//
//   - The pool. Claims, renewals, completions and releases are short
//     statements; InTx transactions last as long as the handler's writes.
//     InTx never takes the last StoreConfig.ReservedConns connections of
//     the pool (a quarter of MaxConns by default), so the middleware's own
//     statements never wait behind handler transactions: size MaxConns
//     for the handlers' concurrency plus that reserve, within the
//     server's max_connections for every instance. Watch pool.Stat():
//     EmptyAcquireCount and AcquireDuration growing mean requests wait
//     for connections (the pool, or the server, is too small);
//     NewConnsCount growing steadily means connections keep dying.
//   - The statement bound. A claim's, renewal's, completion's or
//     release's statement, once sent, runs to its end or to
//     StoreConfig.OpTimeout (DefaultOpTimeout), whatever the caller's
//     context, which bounds only the wait: the caller gets its answer,
//     or its deadline's error, in time, and the connection is not closed
//     under it (pgx closes a connection whose statement its context
//     interrupts, sends the server a cancel request on another, and the
//     pool holds the closed connection's place for up to 15 s, which
//     starves the pool when a loaded or unreachable server makes many
//     statements miss their deadline). A statement past OpTimeout fails
//     and its connection leaves the pool at once; a claim that takes
//     effect after its caller gave up is released by the Store. Keep
//     OpTimeout above the middleware's StoreTimeout; it is also how long
//     a connection that went silent can hold its place in the pool.
//   - The transaction bound. StoreConfig.TxTimeout (DefaultTxTimeout,
//     as long as DefaultOpTimeout) bounds every InTx transaction from
//     asking for a connection to its commit, on the client and on the
//     server (statement_timeout and idle_in_transaction_session_timeout),
//     even when the handler's context is never cancelled: a transaction
//     stuck on a dead connection ends and its connection is replaced. A
//     statement on a silent connection cannot be told from a slow one,
//     so TxTimeout is also how long a request can hang on one: set it to
//     the longest transaction the handlers run, not more. Besides the
//     handler's own work, a request that runs it waits at most the
//     middleware's StoreTimeout for its claim (and its Wait, if it first
//     found the key in flight), TxTimeout for InTx, and a StoreTimeout to
//     release the key after a failed transaction. Watch the handlers'
//     errors that wrap context.DeadlineExceeded, and pg_stat_activity for
//     sessions idle in transaction.
//   - The lease (idempotency.Config.Lease) and the middleware's
//     StoreTimeout: a record whose handler died is taken over after the
//     lease; a store slower than StoreTimeout answers 503. Keep the lease
//     above TxTimeout and StoreTimeout below OpTimeout. Watch the
//     middleware's OnError: claims that fail are 503s, and releases or
//     completions that fail leave keys answering 409 until they land or
//     the lease runs out.
//
// Keys reach the database as the SHA-256 of the store key, as bytea, so
// no key or principal can be refused by the database as text; SchemaSQL
// converts a table of an earlier, text-keyed version in place.
package unherdpg
