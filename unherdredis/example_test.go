package unherdredis_test

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdredis"
)

// Every process that opens the budget "payments" on the same Redis shares
// one retry budget: the fleet's retries stay within 10% of its requests
// plus one fleet-wide floor, however many processes there are. The README
// quotes this example; it compiles but does not run, for want of a Redis.
func ExampleNewBudget() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	b, err := unherdredis.NewBudget(rdb, "payments", unherdredis.BudgetConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	p, err := retry.New(retry.Config{Budget: b})
	if err != nil {
		log.Fatal(err)
	}
	_ = p.Do(context.Background(), func(ctx context.Context) error { return nil })
}
