package limit

import (
	"fmt"
	"time"
)

// Sample is how one request ended, as an [Algorithm] sees it.
type Sample struct {
	// RTT is the time from Acquire to the release: the request's latency,
	// or how long it waited before it was dropped.
	RTT time.Duration
	// InFlight is how many requests were in flight when this one was
	// admitted, itself included.
	InFlight int
	// Dropped is true if the request was dropped or timed out.
	Dropped bool
	// Now is the time of the release.
	Now time.Time
}

// Algorithm moves a concurrency limit with the samples it is given. Its
// Update is a function of its state and the sample alone: it reads no
// clock and draws no random numbers. An Algorithm is not safe for
// concurrent use: a [Limiter] serialises the calls to it, and each
// Limiter needs its own.
type Algorithm interface {
	// Limit returns the current limit, the initial one before any Update.
	Limit() int
	// Update takes a sample and returns the new limit.
	Update(s Sample) int
}

// Fixed is a constant limit: a bulkhead. Its value is the limit, which
// must be at least 1. It keeps no state and may be shared.
type Fixed int

// Limit returns f.
func (f Fixed) Limit() int { return int(f) }

// Update returns f: the limit never moves.
func (f Fixed) Update(Sample) int { return int(f) }

// checkLimits checks an algorithm's limits as configured (initial, min
// and max, none negative; zero for a default) and, with the defaults in
// (dMin, dMax), that the most is not below the least.
func checkLimits(alg string, initial, min, max, dMin, dMax int) error {
	switch {
	case initial < 0:
		return fmt.Errorf("%w: %s InitialLimit %d is negative", ErrInvalidConfig, alg, initial)
	case min < 0:
		return fmt.Errorf("%w: %s MinLimit %d is negative", ErrInvalidConfig, alg, min)
	case max < 0:
		return fmt.Errorf("%w: %s MaxLimit %d is negative", ErrInvalidConfig, alg, max)
	case dMax < dMin:
		return fmt.Errorf("%w: %s MaxLimit %d is below MinLimit %d", ErrInvalidConfig, alg, dMax, dMin)
	}
	return nil
}
