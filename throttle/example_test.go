package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/throttle"
)

// The adaptive throttle rejects nothing while the dependency accepts at
// least half of the requests (K = 2), and sheds a growing share once it
// stops accepting. Time and randomness are explicit here so the output is
// fixed.
func ExampleAdaptive() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := throttle.NewAdaptive(throttle.AdaptiveSettings{
		Now:  func() time.Time { return now },
		Rand: rand.NewPCG(1, 2),
	})
	if err != nil {
		panic(err)
	}
	overloaded := admission.Outcome{Err: errors.New("429"), Class: failure.Throttled}
	call := func(o admission.Outcome) bool {
		t, err := a.AdmitAt(now)
		if err != nil {
			return false // errors.Is(err, throttle.ErrThrottled)
		}
		a.DoneAt(now, t, o)
		return true
	}
	for range 100 {
		call(admission.Outcome{}) // 100 accepted
	}
	fmt.Printf("after 100 accepted: p = %.2f\n", a.Probability())
	rejected := 0
	for range 300 {
		if !call(overloaded) {
			rejected++
		}
	}
	fmt.Printf("after 300 more, none accepted: p = %.2f, %d rejected locally\n", a.Probability(), rejected)
	// Output:
	// after 100 accepted: p = 0.00
	// after 300 more, none accepted: p = 0.43, 49 rejected locally
}

// The AWS adaptive rate limiter does nothing until the dependency
// throttles; then it paces calls at a rate that follows CUBIC, starting at
// 0.5 calls/s when no send rate was measured yet. A call whose wait would
// pass its deadline is refused at once.
func ExampleRateLimiter() {
	r, _ := throttle.NewRateLimiter(throttle.RateLimiterSettings{})

	t, err := r.Admit(context.Background())
	fmt.Println("before any throttle:", err)
	r.Done(context.Background(), t, admission.Outcome{Err: errors.New("429"), Class: failure.Throttled})
	rate, enabled := r.FillRate()
	fmt.Println("after a throttle:", rate, "tokens/s, enabled:", enabled)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = r.Admit(ctx) // the next token is 2 s away: refused at once
	fmt.Println(err)
	// Output:
	// before any throttle: <nil>
	// after a throttle: 0.5 tokens/s, enabled: true
	// throttle: send rate limit wait would pass the deadline
}
