package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
)

// A breaker trips after consecutive failures, rejects while open, and
// closes again when a probe succeeds. The clock is explicit here so the
// example is deterministic.
func Example() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := breaker.New(breaker.Settings{
		ConsecutiveFailures: 3,
		OpenDuration:        10 * time.Second,
		OpenJitter:          -1, // no jitter, for a fixed output
		Now:                 func() time.Time { return start },
		OnStateChange: func(from, to breaker.State) {
			fmt.Printf("  %v -> %v\n", from, to)
		},
	})
	if err != nil {
		panic(err)
	}
	unavailable := admission.Outcome{Err: errors.New("503"), Class: failure.Transient}
	for i := range 3 {
		t, _ := b.AdmitAt(start)
		fmt.Println("call", i+1, "fails")
		b.DoneAt(start, t, unavailable)
	}
	_, err = b.AdmitAt(start.Add(5 * time.Second))
	fmt.Println("after 5 s:", err)
	t, err := b.AdmitAt(start.Add(10 * time.Second))
	fmt.Println("after 10 s:", err, b.State())
	b.DoneAt(start.Add(10*time.Second), t, admission.Outcome{})
	fmt.Println("probe succeeded:", b.State())
	// Output:
	// call 1 fails
	// call 2 fails
	// call 3 fails
	//   closed -> open
	// after 5 s: breaker: open
	//   open -> half-open
	// after 10 s: <nil> half-open
	//   half-open -> closed
	// probe succeeded: closed
}

// As a guard of a retry policy, an open breaker stops the loop at once:
// the rejection is never retried.
func Example_guard() {
	b, _ := breaker.New(breaker.Settings{ConsecutiveFailures: 2})
	p, _ := retry.New(retry.Config{MaxAttempts: 5, Guards: []admission.Guard{b}})
	calls := 0
	err := p.Do(context.Background(), func(ctx context.Context) error {
		calls++
		return retry.Judge(errors.New("overloaded"), retry.Verdict{Class: failure.Throttled, Delay: 0, HasDelay: true})
	})
	var re *retry.Error
	errors.As(err, &re)
	fmt.Println(calls, re.Attempts, errors.Is(err, retry.ErrRejected), errors.Is(err, breaker.ErrOpen))
	// Output: 2 2 true true
}

// Allow is the two-step form for middleware.
func ExampleBreaker_Allow() {
	b, _ := breaker.New(breaker.Settings{})
	done, err := b.Allow()
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	done(nil) // report the call's error, nil for success
	fmt.Println(b.State())
	// Output: closed
}
