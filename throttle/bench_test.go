package throttle

import (
	"testing"

	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/guardtest"
)

// BenchmarkThrottleParallel measures Admit and Done of an accepted call on
// a healthy Adaptive throttle from many goroutines: the path every call
// takes while the dependency keeps up.
func BenchmarkThrottleParallel(b *testing.B) {
	guardtest.Parallel(b, configtest.Must(NewAdaptive(AdaptiveSettings{}))(b), success, false)
}

// BenchmarkThrottleShedding measures Admit and Done while the throttle is
// shedding (every answer throttled): the locked path, with a clock read.
func BenchmarkThrottleShedding(b *testing.B) {
	guardtest.Parallel(b, configtest.Must(NewAdaptive(AdaptiveSettings{}))(b), throttled, true)
}

// BenchmarkRateLimiterParallel measures Admit and Done of a success on a
// RateLimiter that has not been throttled: Admit is one atomic load, Done
// takes the lock and reads the clock to measure the send rate.
func BenchmarkRateLimiterParallel(b *testing.B) {
	guardtest.Parallel(b, configtest.Must(NewRateLimiter(RateLimiterSettings{}))(b), success, false)
}
