package throttle

import (
	"context"
	"testing"
)

// BenchmarkThrottleParallel measures Admit and Done of an accepted call on
// a healthy Adaptive throttle from many goroutines: the path every call
// takes while the dependency keeps up.
func BenchmarkThrottleParallel(b *testing.B) {
	b.ReportAllocs()
	a, err := NewAdaptive(AdaptiveSettings{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, err := a.Admit(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			a.Done(t, success)
		}
	})
}

// BenchmarkThrottleShedding measures Admit and Done while the throttle is
// shedding (every answer throttled): the locked path, with a clock read.
func BenchmarkThrottleShedding(b *testing.B) {
	b.ReportAllocs()
	a, err := NewAdaptive(AdaptiveSettings{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if t, err := a.Admit(ctx); err == nil {
				a.Done(t, throttled)
			}
		}
	})
}

// BenchmarkRateLimiterParallel measures Admit and Done of a success on a
// RateLimiter that has not been throttled: Admit is one atomic load, Done
// takes the lock and reads the clock to measure the send rate.
func BenchmarkRateLimiterParallel(b *testing.B) {
	b.ReportAllocs()
	r, err := NewRateLimiter(RateLimiterSettings{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, err := r.Admit(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			r.Done(t, success)
		}
	})
}
