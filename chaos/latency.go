package chaos

import (
	"math"
	"math/rand/v2"
	"time"
)

// Latency draws a call's added delay from the Injector's seeded source. A
// negative draw counts as zero. The constructors below cover the usual
// shapes; any function will do.
type Latency func(r *rand.Rand) time.Duration

// Fixed adds d to every call.
func Fixed(d time.Duration) Latency {
	return func(*rand.Rand) time.Duration { return d }
}

// Uniform adds a delay drawn uniformly from [lo, hi].
func Uniform(lo, hi time.Duration) Latency {
	return func(r *rand.Rand) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
}

// Exponential adds a delay drawn from an exponential distribution of the
// given mean: most calls a little slower, a few much slower.
func Exponential(mean time.Duration) Latency {
	return func(r *rand.Rand) time.Duration {
		return clampDuration(r.ExpFloat64() * float64(mean))
	}
}

// LogNormal adds a delay whose logarithm is normal: median times
// e^(sigma*z), z standard normal. It is the usual shape of service
// latency, with a long right tail (sigma 0.5: p99 is 3.2 times the median).
func LogNormal(median time.Duration, sigma float64) Latency {
	return func(r *rand.Rand) time.Duration {
		return clampDuration(float64(median) * math.Exp(sigma*r.NormFloat64()))
	}
}

// Spike adds extra to a share p of calls, and nothing to the others: a
// stall now and then (a garbage collection, a lost packet's
// retransmission).
func Spike(p float64, extra time.Duration) Latency {
	return func(r *rand.Rand) time.Duration {
		if r.Float64() < p {
			return extra
		}
		return 0
	}
}

func clampDuration(f float64) time.Duration {
	if !(f < math.MaxInt64) { // also NaN
		return math.MaxInt64
	}
	return time.Duration(f)
}
