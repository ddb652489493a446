package redelivery

import (
	"errors"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/failure"
)

// Defaults used for zero fields of a [Policy].
const (
	DefaultBase          = 5 * time.Second
	DefaultCap           = 5 * time.Minute
	DefaultMaxDeliveries = 8
)

// ErrInvalid is wrapped by every error that Validate returns.
var ErrInvalid = errors.New("redelivery: invalid policy")

// Policy says when a queue should deliver a failed message again, and
// when to stop and dead-letter it. The zero value is the default: full
// jitter from a 5 s base doubling to a 5 min cap, and a dead letter after
// the 8th delivery fails (about 5 minutes of redelivery on average). A
// Policy is a plain value, safe to copy and to use from many goroutines.
type Policy struct {
	// Base is the ceiling of the delay after the first delivery fails;
	// each later failure doubles it. Zero means DefaultBase (5 s): a queue
	// redelivers to whichever consumer is free, and a dependency that
	// failed a moment ago rarely recovers in milliseconds.
	Base time.Duration
	// Cap bounds every delay. Zero means DefaultCap (5 min).
	Cap time.Duration
	// Jitter spreads the delays; the zero value is Full. Decorrelated
	// jitter needs the previous delay, which a queue does not carry with
	// the message: the previous retry's un-jittered ceiling stands in for
	// it.
	Jitter backoff.Jitter
	// MaxDeliveries counts every delivery, the first included: when the
	// MaxDeliveries-th fails, the message is dead-lettered instead of
	// redelivered. Zero means DefaultMaxDeliveries (8).
	MaxDeliveries int
}

// Validate reports a policy that cannot work: negative durations, a base
// above the cap, an unknown jitter, or a negative MaxDeliveries.
func (p Policy) Validate() error {
	if p.MaxDeliveries < 0 {
		return fmt.Errorf("%w: MaxDeliveries %d is negative; use zero for the default of %d", ErrInvalid, p.MaxDeliveries, DefaultMaxDeliveries)
	}
	if err := p.schedule().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// schedule is the backoff.Schedule the delays come from.
func (p Policy) schedule() backoff.Schedule {
	b, c := p.Base, p.Cap
	if b == 0 {
		b = DefaultBase
	}
	if c == 0 {
		c = max(DefaultCap, b)
	}
	// A queue has no separate throttled schedule: ThrottledBase is the
	// base, so that the schedule's own validation sees no other field.
	return backoff.Schedule{Base: b, ThrottledBase: b, Cap: c, Jitter: p.Jitter}
}

// max deliveries, resolved.
func (p Policy) maxDeliveries() int {
	if p.MaxDeliveries == 0 {
		return DefaultMaxDeliveries
	}
	return p.MaxDeliveries
}

// Delay returns how long the queue should wait before delivering a
// message again after its delivered-th delivery failed (1 for the first
// delivery, as NATS JetStream's NumDelivered and SQS's
// ApproximateReceiveCount count). u is a uniformly random 64-bit draw.
// Delay is a pure function; it never returns a negative duration or one
// above the cap, whatever delivered is.
func (p Policy) Delay(delivered int, u uint64) time.Duration {
	n := max(delivered-1, 0) // zero-based retry number, as backoff counts
	s := p.schedule()
	var prev time.Duration
	if s.Jitter == backoff.Decorrelated && n > 0 {
		prev = s.Temp(n-1, false)
	}
	return s.Delay(n, prev, u)
}

// Exhausted reports whether a message whose delivered-th delivery failed
// has used its deliveries and goes to the dead letters.
func (p Policy) Exhausted(delivered int) bool { return delivered >= p.maxDeliveries() }

// Decision is what to do with a message whose delivery failed.
type Decision struct {
	// DeadLetter is true when the message must not be delivered again:
	// its deliveries are used up, or its failure is permanent.
	DeadLetter bool
	// Delay is the wait before the next delivery when DeadLetter is
	// false.
	Delay time.Duration
}

// Decide is Delay and Exhausted together, with the failure's class: a
// Permanent failure (validation, authorisation, a message that cannot be
// parsed) is dead-lettered at once, since delivering it again cannot
// help; every other class is redelivered after Delay until Exhausted.
func (p Policy) Decide(delivered int, class failure.Class, u uint64) Decision {
	if class == failure.Permanent || p.Exhausted(delivered) {
		return Decision{DeadLetter: true}
	}
	return Decision{Delay: p.Delay(delivered, u)}
}
