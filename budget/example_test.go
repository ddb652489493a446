package budget_test

import (
	"fmt"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// A token bucket in an outage: every call fails, each retry costs 14 of
// the 500 tokens, and after 35 retries the bucket is too low for another,
// so calls go out with their first attempt only. Successes refill it.
func ExampleTokenBucket() {
	b, err := budget.NewTokenBucket(budget.TokenBucketConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	retries := 0
	for range 30 { // 30 calls of up to 3 attempts, all failing
		for range 2 {
			if !b.Withdraw(failure.Transient) {
				break
			}
			retries++
		}
	}
	fmt.Println("retries:", retries, "tokens left:", b.Tokens())
	b.Record(budget.Attempt{N: 1}) // the dependency is back
	fmt.Println("after a success:", b.Tokens(), b.Withdraw(failure.Timeout))
	for range 10 {
		b.Record(budget.Attempt{N: 1})
	}
	fmt.Println("after 10 more:", b.Tokens(), b.Withdraw(failure.Timeout))
	// Output:
	// retries: 35 tokens left: 10
	// after a success: 11 false
	// after 10 more: 21 true
}

// gRPC retry throttling with maxTokens 10 and tokenRatio 0.1: five failures
// bring the count to half, and retries stop until successes raise it.
func ExampleGRPC() {
	g, err := budget.NewGRPC(budget.GRPCConfig{MaxTokens: 10, TokenRatio: 0.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 1; i <= 5; i++ {
		g.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
		fmt.Printf("failure %d: %.1f tokens, retry allowed: %v\n", i, g.Tokens(), g.Withdraw(failure.Transient))
	}
	g.Record(budget.Attempt{N: 1})
	fmt.Printf("a success: %.1f tokens, retry allowed: %v\n", g.Tokens(), g.Withdraw(failure.Transient))
	// Output:
	// failure 1: 9.0 tokens, retry allowed: true
	// failure 2: 8.0 tokens, retry allowed: true
	// failure 3: 7.0 tokens, retry allowed: true
	// failure 4: 6.0 tokens, retry allowed: true
	// failure 5: 5.0 tokens, retry allowed: false
	// a success: 5.1 tokens, retry allowed: true
}

// A ratio budget used for hedged requests: at most 5% of requests may be
// hedged, with no floor. The times are explicit, so the arithmetic needs
// no clock.
func ExampleRatio() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hedges, err := budget.NewRatio(budget.RatioConfig{
		Ratio:   0.05,
		NoFloor: true,
		Now:     func() time.Time { return start },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 100 { // 100 requests in the first second
		hedges.RecordAt(start, budget.Attempt{N: 1})
	}
	granted := 0
	for range 10 {
		if hedges.WithdrawAt(start.Add(time.Second), failure.Transient) {
			granted++
		}
	}
	fmt.Println("hedges granted:", granted)
	// Ten seconds later the first second's requests have left the window.
	fmt.Println("later:", hedges.WithdrawAt(start.Add(11*time.Second), failure.Transient))
	// Output:
	// hedges granted: 5
	// later: false
}
