package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
)

var errUnavailable = errors.New("service unavailable")

func Example() {
	p := retry.Default()
	calls := 0
	err := p.Do(context.Background(), func(ctx context.Context) error {
		calls++
		if calls < 2 {
			return errUnavailable // transient: retried after a short jittered wait
		}
		return nil
	})
	fmt.Println(calls, err)
	// Output: 2 <nil>
}

func ExampleDoValue() {
	p, err := retry.New(retry.Config{MaxAttempts: 4, Backoff: backoff.Schedule{Base: time.Millisecond}})
	if err != nil {
		panic(err)
	}
	calls := 0
	v, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (string, error) {
		calls++
		if calls < 3 {
			return "", errUnavailable
		}
		return "hello", nil
	})
	fmt.Println(v, err, calls)
	// Output: hello <nil> 3
}

// The returned error says why the loop stopped and keeps the operation's
// own error reachable.
func ExampleError() {
	p, _ := retry.New(retry.Config{Backoff: backoff.Schedule{Immediate: true}})
	err := p.Do(context.Background(), func(ctx context.Context) error { return errUnavailable })

	var re *retry.Error
	fmt.Println(errors.As(err, &re), re.Attempts)
	fmt.Println(errors.Is(err, retry.ErrAttemptsExhausted), errors.Is(err, errUnavailable))
	fmt.Println(err)
	// Output:
	// true 3
	// true true
	// retry: attempts exhausted after 3 attempts: service unavailable
}

// A permanent error is not retried.
func ExampleMarkPermanent() {
	calls := 0
	err := retry.Default().Do(context.Background(), func(ctx context.Context) error {
		calls++
		return retry.MarkPermanent(errors.New("invalid argument"))
	})
	fmt.Println(calls, errors.Is(err, retry.ErrPermanent))
	// Output: 1 true
}

// A wait that would end after the caller's deadline is not started.
func ExamplePolicy_Do_deadline() {
	p, _ := retry.New(retry.Config{Backoff: backoff.Schedule{Base: time.Second, Jitter: backoff.None}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Do(ctx, func(ctx context.Context) error { return errUnavailable })
	fmt.Println(errors.Is(err, retry.ErrDeadline), time.Since(start) < 100*time.Millisecond)
	// Output: true true
}

// Calls made while serving a caller that retries make a single attempt.
func ExampleWithOuterRetry() {
	ctx := retry.WithOuterRetry(context.Background())
	calls := 0
	err := retry.Default().Do(ctx, func(ctx context.Context) error {
		calls++
		return errUnavailable
	})
	fmt.Println(calls, errors.Is(err, retry.ErrAttemptsExhausted))
	// Output: 1 true
}
