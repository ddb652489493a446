package throttle

import (
	"testing"

	"github.com/unherd/unherd/internal/guardtest"
)

// BenchmarkThrottleParallel measures Admit and Done of an accepted call on
// a healthy Adaptive throttle from many goroutines: the path every call
// takes while the dependency keeps up.
func BenchmarkThrottleParallel(b *testing.B) {
	a, err := NewAdaptive(AdaptiveSettings{})
	if err != nil {
		b.Fatal(err)
	}
	guardtest.Parallel(b, a, success, false)
}

// BenchmarkThrottleShedding measures Admit and Done while the throttle is
// shedding (every answer throttled): the locked path, with a clock read.
func BenchmarkThrottleShedding(b *testing.B) {
	a, err := NewAdaptive(AdaptiveSettings{})
	if err != nil {
		b.Fatal(err)
	}
	guardtest.Parallel(b, a, throttled, true)
}

// BenchmarkRateLimiterParallel measures Admit and Done of a success on a
// RateLimiter that has not been throttled: Admit is one atomic load, Done
// takes the lock and reads the clock to measure the send rate.
func BenchmarkRateLimiterParallel(b *testing.B) {
	r, err := NewRateLimiter(RateLimiterSettings{})
	if err != nil {
		b.Fatal(err)
	}
	guardtest.Parallel(b, r, success, false)
}
