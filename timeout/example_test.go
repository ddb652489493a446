package timeout_test

import (
	"context"
	"fmt"
	"time"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/timeout"
)

// An Adaptive timeout starts at its ceiling and, once it has seen enough
// successful attempts, tracks 1.5 x their p99.9.
func ExampleAdaptive() {
	t, err := timeout.New(timeout.Config{})
	if err != nil {
		panic(err)
	}
	fmt.Println(t.AttemptTimeout())
	for i := range 5000 {
		t.Observe(time.Duration(10+i%10)*time.Millisecond, true) // 10..19 ms
	}
	fmt.Println(t.AttemptTimeout().Round(time.Millisecond))
	// Output:
	// 10s
	// 29ms
}

// retry.Config.Timeouts takes the adaptive timeout: each attempt gets a
// context bounded by it, and reports its latency back.
func ExampleAdaptive_retry() {
	t, _ := timeout.New(timeout.Config{Initial: 100 * time.Millisecond})
	p, _ := retry.New(retry.Config{Timeouts: t})
	err := p.Do(context.Background(), func(ctx context.Context) error {
		deadline, _ := ctx.Deadline()
		fmt.Println("attempt bounded:", time.Until(deadline) <= 100*time.Millisecond)
		return nil
	})
	fmt.Println(err)
	// Output:
	// attempt bounded: true
	// <nil>
}
