package budget

import (
	"cmp"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/unherd/unherd/failure"
)

// Defaults of [ConcurrencyConfig]: Envoy's retry_budget defaults
// (https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/cluster/v3/circuit_breaker.proto),
// which the Gateway API's BackendTrafficPolicy retry budget (GEP-3388)
// follows, and failsafe-go's budget's.
const (
	// DefaultConcurrencyRatio is the share of the attempts in flight that
	// may be retries: Envoy's budget_percent of 20%.
	DefaultConcurrencyRatio = 0.2
	// DefaultMinRetryConcurrency is how many retries may be in flight
	// whatever the traffic: Envoy's min_retry_concurrency of 3.
	DefaultMinRetryConcurrency = 3
)

// ConcurrencyConfig configures a [Concurrency] budget. The zero value
// allows as many retries in flight as 20% of the attempts in flight, and
// at least 3.
type ConcurrencyConfig struct {
	// Ratio is the most retries in flight per attempt in flight (first
	// attempts and retries alike), in (0, 1]. Zero means
	// DefaultConcurrencyRatio (0.2).
	Ratio float64
	// MinRetries is how many retries may be in flight however few
	// attempts are. Zero means DefaultMinRetryConcurrency (3); a negative
	// value means none, so that a budget with no attempts in flight
	// allows no retry.
	MinRetries int
}

// Validate reports settings that cannot work, naming the field.
func (c *ConcurrencyConfig) Validate() error {
	if !(c.Ratio >= 0 && c.Ratio <= 1) {
		return fmt.Errorf("%w: ConcurrencyConfig.Ratio %v is outside (0, 1]; use 0 for the default of 0.2", ErrInvalidConfig, c.Ratio)
	}
	return nil
}

// Concurrency is a retry budget on concurrency, as Envoy's retry_budget
// and failsafe-go's budget define it: a retry may start while the retries
// in flight are fewer than Ratio times the attempts in flight, or fewer
// than MinRetries. Where [Ratio] and [TokenBucket] bound retries over
// time, it bounds them at each moment: a burst of failures cannot add more
// than a fifth to the load in flight, and the allowance comes back as soon
// as retries end, not after a window.
//
// It counts what the retry loop tells it: a retry is in flight from the
// Withdraw that allows it until its attempt ends (Record) or is abandoned
// ([Tracker]'s Abandon), or until Refund when it is not made; an attempt
// is in flight from Start to its Record or Abandon. A hedge, a copy of an
// attempt (retry/engine's Request), counts as a retry and an attempt in
// flight in the same way. Give each dependency its own. It is safe for
// concurrent use, lock-free, and allocates nothing.
type Concurrency struct {
	ratio    float64
	min      int64
	attempts atomic.Int64 // attempts in flight, retries included
	retries  atomic.Int64 // retries allowed and not ended
}

// NewConcurrency returns a Concurrency budget with no attempt in flight.
func NewConcurrency(cfg ConcurrencyConfig) (*Concurrency, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Concurrency{
		ratio: cmp.Or(cfg.Ratio, DefaultConcurrencyRatio),
		min:   int64(max(cmp.Or(cfg.MinRetries, DefaultMinRetryConcurrency), 0)),
	}, nil
}

// Withdraw allows a retry if the retries in flight are fewer than the
// ratio of the attempts in flight, or than MinRetries, and counts it in
// flight.
func (b *Concurrency) Withdraw(failure.Class) bool {
	for {
		r := b.retries.Load()
		limit := max(b.min, int64(math.Floor(b.ratio*float64(b.attempts.Load()))))
		if r >= limit {
			return false
		}
		if b.retries.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// Refund ends a retry that was allowed and not made.
func (b *Concurrency) Refund(failure.Class) { b.retries.Add(-1) }

// Start counts an attempt in flight.
func (b *Concurrency) Start(Attempt) { b.attempts.Add(1) }

// Record ends an attempt that ran: it and, for a retry (a.N > 1), the
// retry leave the counts.
func (b *Concurrency) Record(a Attempt) { b.end(a) }

// Abandon ends an attempt that did not run to a result, as Record does.
func (b *Concurrency) Abandon(a Attempt) { b.end(a) }

func (b *Concurrency) end(a Attempt) {
	b.attempts.Add(-1)
	if a.N > 1 {
		b.retries.Add(-1)
	}
}

// InFlight returns the attempts and the retries in flight.
func (b *Concurrency) InFlight() (attempts, retries int) {
	return int(b.attempts.Load()), int(b.retries.Load())
}
