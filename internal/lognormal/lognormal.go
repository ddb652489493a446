// Package lognormal draws the latencies that tests and benchmarks feed
// to estimators, timeouts and limiters: median times e^(sigma*z), z
// standard normal, the usual shape of service latency (sigma 0.5: p99 is
// 3.2 times the median).
package lognormal

import (
	"math"
	"math/rand/v2"
	"time"
)

// Draw returns one latency around median with spread sigma, drawn from r.
func Draw(r *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
}

// Sample returns n latencies around median with spread sigma, drawn from
// a PCG seeded (1, 2): the same n latencies on every run.
func Sample(n int, median time.Duration, sigma float64) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = Draw(r, median, sigma)
	}
	return out
}
