// Package unherdredis keeps unherd's fleet-wide state in Redis, through a
// go-redis v9 redis.UniversalClient, so that standalone, Sentinel and
// Cluster deployments all work.
//
// Store is an idempotency.Store: give it to idempotency.Config and every
// server sharing the Redis sees the same records:
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	m, err := idempotency.New(idempotency.Config{Store: unherdredis.NewStore(rdb, unherdredis.StoreConfig{})})
//
// Budget is a fleet-wide retry budget (package fleet) whose ledger is in
// Redis: every process that opens the budget of one name shares it, and
// the hot path never waits for Redis:
//
//	b, err := unherdredis.NewBudget(rdb, "payments", unherdredis.BudgetConfig{})
//	defer b.Close()
//
// Claims, renewals, completions and releases are Lua scripts, atomic on
// the server and fenced by the claim's token, so that a process whose
// lease expired cannot overwrite the record of the one that took the key
// over. Leases and TTLs are Redis key expiries, measured by the Redis
// server's clock.
//
// What an operator sets and watches, on the client given to NewStore:
//
//   - Command timeouts. By default go-redis bounds a command by
//     ReadTimeout and WriteTimeout, not by its context's deadline: a
//     command sent on a connection whose server vanished without a reset
//     fails when ReadTimeout passes (go-redis then drops the connection),
//     and the middleware waits that long, past its StoreTimeout. Set
//     ReadTimeout and WriteTimeout to how long a command may hang (a
//     little above StoreTimeout). Options.ContextTimeoutEnabled makes
//     the context's deadline cut the command instead, at the cost of its
//     connection each time: when the server is slowed down by load, the
//     deadlines missed together close connections together, and
//     reconnecting adds to the load (end-to-end runs on a loaded machine
//     recovered from a blackhole later with it than without).
//
//   - Connecting. DialTimeout bounds a new connection (a couple of
//     seconds; the default is 5 s), and PoolTimeout the wait for a free
//     one when PoolSize connections are busy: keep it below StoreTimeout.
//     Size PoolSize for the handlers' concurrency: each request holds a
//     connection for one command at a time.
//
//   - Dead idle connections. go-redis's default dialer probes an idle
//     connection with TCP keep-alives after 30 s and drops it after 3
//     unanswered probes 5 s apart; for faster detection, give
//     Options.Dialer a net.Dialer with a shorter KeepAliveConfig (and, on
//     Linux, TCP_USER_TIMEOUT in its Control). ConnMaxIdleTime (30 min by
//     default) closes connections idle longer than a load balancer or NAT
//     keeps their state.
//
//   - Retries. MaxRetries resends a command the client thinks safe to
//     resend; the Store's scripts are fenced by tokens, so a resend is
//     harmless, but each one spends time the middleware's StoreTimeout
//     counts: MaxRetries -1 (none) answers faster while the server is
//     down, and the middleware's retries and the client's take over.
//
//     rdb := redis.NewClient(&redis.Options{
//     Addr:         "127.0.0.1:6379",
//     DialTimeout:  2 * time.Second,
//     ReadTimeout:  3 * time.Second, // StoreTimeout 2 s
//     WriteTimeout: 3 * time.Second,
//     PoolTimeout:  time.Second,
//     MaxRetries:   -1,
//     })
package unherdredis
