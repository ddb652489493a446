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
)

// A driver with a clock of its own (a simulator, an event loop) runs the
// same state machine Do runs: Admit before every attempt, Done after it
// with the time and a random draw, then wait the Decision's delay.
func ExampleCall() {
	p, err := retry.New(retry.Config{MaxAttempts: 3})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	draw := uint64(math.MaxUint64) // the largest draw: full jitter waits its whole ceiling
	c := p.Begin(false)
	for {
		if err := c.Admit(context.Background()); err != nil {
			fmt.Println("rejected:", err)
			return
		}
		d := c.Done(now, time.Time{}, errUnavailable, draw)
		if d.Reason != nil {
			fmt.Println("stop:", c.Err(d))
			return
		}
		fmt.Printf("attempt %d failed; wait %v\n", c.Attempts(), d.Delay)
		now = now.Add(d.Delay)
	}
	// Output:
	// attempt 1 failed; wait 50ms
	// attempt 2 failed; wait 100ms
	// stop: retry: attempts exhausted after 3 attempts: service unavailable
}

// AWS2026 is the AWS SDKs' current retry behaviour; its quota charges a
// failure's retry 14 tokens and a throttling error's 5.
func ExampleAWS2026() {
	cfg := retry.AWS2026()
	b := cfg.Budget.(*budget.TokenBucket)
	p, err := retry.New(cfg)
	if err != nil {
		panic(err)
	}
	c := p.Begin(false)
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
