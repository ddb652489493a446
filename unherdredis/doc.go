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
package unherdredis
