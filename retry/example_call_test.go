package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// AWS2026 is the AWS SDKs' current retry behaviour; its quota charges a
// failure's retry 14 tokens and a throttling error's 5.
func ExampleAWS2026() {
	cfg := retry.AWS2026()
	b := cfg.Budget.(*budget.TokenBucket)
	p, err := retry.New(cfg)
	if err != nil {
		panic(err)
	}
	c := engine.Begin(context.Background(), p)
	_ = c.Admit(context.Background())
	d := c.Done(time.Time{}, time.Time{}, errUnavailable, math.MaxUint64)
	fmt.Println(d.Delay, b.Tokens())
	_ = c.Admit(context.Background())
	d = c.Done(time.Time{}, time.Time{}, retry.Judge(errUnavailable, retry.Verdict{Class: failure.Throttled}), math.MaxUint64)
	fmt.Println(d.Delay, b.Tokens())
	// Output:
	// 50ms 486
	// 2s 481
}

// OnResult retries an answer that says "not yet"; when the attempts run
// out, the last such answer comes back with the error.
func ExampleOnResult() {
	p, err := retry.New(retry.Config{MaxAttempts: 3, Backoff: backoff.Schedule{Immediate: true}})
	if err != nil {
		panic(err)
	}
	polls := 0
	poll := func(context.Context) (string, error) {
		polls++
		return "pending", nil
	}
	v, err := retry.DoValue(context.Background(), p, retry.OnResult(poll, func(s string) bool { return s == "pending" }))
	fmt.Println(polls, v, errors.Is(err, retry.ErrAttemptsExhausted), errors.Is(err, retry.ErrRetryableResult))
	// Output: 3 pending true true
}
