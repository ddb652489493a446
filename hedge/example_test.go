package hedge_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/retry"
)

var replicas = []string{"replica-a", "replica-b", "replica-c"}

// The primary is stuck; after the delay a hedge goes to another replica
// and wins, and the primary's context is cancelled with ErrLost.
func Example() {
	h, err := hedge.New(hedge.Config{Delay: time.Millisecond, Budget: budget.Unlimited})
	if err != nil {
		panic(err)
	}
	v, err := hedge.Do(context.Background(), h, func(ctx context.Context, attempt int) (string, error) {
		if attempt == 0 {
			select {
			case <-ctx.Done(): // a GC pause on replica-a
				fmt.Println("primary:", context.Cause(ctx))
				return "", ctx.Err()
			case <-time.After(time.Minute):
				fmt.Println("primary: not cancelled within a minute")
				return "", context.DeadlineExceeded
			}
		}
		return "answer from " + replicas[attempt], nil
	}, nil)
	fmt.Println(v, err)
	// Output:
	// primary: hedge: another attempt settled the call
	// answer from replica-b <nil>
}

type response struct{ from string }

func (r *response) Close() { fmt.Println("closed the late response from", r.from) }

// A result that arrives after the call was settled goes to the cleanup
// function, so that nothing it holds (an HTTP body) leaks.
func ExampleDo_cleanup() {
	h, _ := hedge.New(hedge.Config{Delay: time.Millisecond, Budget: budget.Unlimited})
	v, err := hedge.Do(context.Background(), h, func(ctx context.Context, attempt int) (*response, error) {
		if attempt == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
				fmt.Println("primary: not cancelled within a minute")
				return nil, context.DeadlineExceeded
			}
			return &response{from: replicas[0]}, nil // answered as it was cancelled
		}
		return &response{from: replicas[attempt]}, nil
	}, (*response).Close)
	fmt.Println(v.from, err)
	// Output:
	// closed the late response from replica-a
	// replica-b <nil>
}

var errUnavailable = errors.New("unavailable")

// Hedging runs inside one retry attempt. Each hedge is a copy of the
// attempt that the retry policy keeps the books of: its guards admit the
// hedge and its budget pays for it. When a hedged attempt fails as a
// whole, the retry loop may try again.
func ExampleDoAttempt() {
	p, _ := retry.New(retry.Config{Backoff: backoff.Schedule{Immediate: true}})
	h, _ := hedge.New(hedge.Config{Delay: time.Millisecond})
	tries := 0
	v, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (string, error) {
		tries++
		v, err := hedge.DoAttempt(ctx, h, p, func(ctx context.Context, attempt int) (string, error) {
			switch {
			case tries == 1:
				return "", errUnavailable // fails before the hedge delay: the attempt fails
			case attempt == 0:
				select {
				case <-ctx.Done(): // stuck; cancelled when the hedge wins
					return "", ctx.Err()
				case <-time.After(time.Minute):
					fmt.Println("primary: not cancelled within a minute")
					return "", context.DeadlineExceeded
				}
			default:
				return "ok from " + replicas[attempt], nil
			}
		}, nil)
		fmt.Printf("retry attempt %d: %q %v\n", tries, v, err)
		return v, err
	})
	fmt.Println(v, err)
	// Output:
	// retry attempt 1: "" unavailable
	// retry attempt 2: "ok from replica-b" <nil>
	// ok from replica-b <nil>
}
