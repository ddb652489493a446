package budget

import (
	"cmp"
	"fmt"
	"sync/atomic"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/validate"
)

// Defaults of [TokenBucketConfig]: the AWS SDKs' "Retry Behavior 2.1"
// quota, [AWS2026Quota] (AWS SDKs and Tools
// Reference Guide, "Retry behavior",
// https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html,
// and aws-sdk-go-v2's aws/retry tests, retry2026_test.go). The older
// behaviour 2.0 is [AWSStandardQuota].
const (
	DefaultCapacity         = 500
	DefaultTransientCost    = 14
	DefaultTimeoutCost      = 14
	DefaultThrottledCost    = 5
	DefaultSuccessIncrement = 1
)

// TokenBucketConfig configures a [TokenBucket]. The zero value is the AWS
// SDKs' "Retry Behavior 2.1" quota ([AWS2026Quota]): 500 tokens, a retry costs 14 (after a timeout too)
// and 5 after a throttling error, a retry's success puts its cost back and
// a first-attempt success adds 1. [AWSStandardQuota] is the older
// behaviour 2.0.
type TokenBucketConfig struct {
	// Capacity is the most tokens the bucket holds, and what it starts
	// with. Zero means DefaultCapacity (500).
	Capacity int64
	// TransientCost is what a retry after a Transient failure costs.
	// Zero means DefaultTransientCost (14).
	TransientCost int64
	// TimeoutCost is what a retry after a Timeout costs. Zero means
	// DefaultTimeoutCost (14, as a transient failure; behaviour 2.0
	// charged 10 against its 5).
	TimeoutCost int64
	// ThrottledCost is what a retry after a Throttled failure costs. Zero
	// means DefaultThrottledCost (5): the dependency asked for less
	// traffic and the retry waits from the longer throttled base, so it
	// drains the bucket more slowly than a failure.
	ThrottledCost int64
	// SuccessIncrement is what a call whose first attempt succeeds puts
	// back. Zero means DefaultSuccessIncrement (1).
	SuccessIncrement int64
}

// AWSStandardQuota returns the retry quota of the AWS SDKs' standard mode
// as "retry behaviour 2.0" defined it: 500 tokens; a retry costs 5, or 10
// after a timeout (5 after a throttling error, like any other); a retry's
// success puts its cost back, a first-attempt success puts back 1.
func AWSStandardQuota() TokenBucketConfig {
	return TokenBucketConfig{Capacity: 500, TransientCost: 5, TimeoutCost: 10, ThrottledCost: 5, SuccessIncrement: 1}
}

// AWS2026Quota returns the retry quota of the AWS SDKs' "Retry Behavior
// 2.1" (the default of aws-sdk-go-v2 since v1.48.0, opted into before
// with AWS_NEW_RETRIES_2026=true), which is also the zero
// TokenBucketConfig: 500 tokens; a retry costs 14, after a timeout too,
// and 5 after a throttling error, so that a dependency that fails stops
// being retried sooner while one that asks for less traffic (and is
// waited for from a longer base) may still be; a retry's success puts its
// cost back, a first-attempt success puts back 1.
func AWS2026Quota() TokenBucketConfig {
	return TokenBucketConfig{Capacity: 500, TransientCost: 14, TimeoutCost: 14, ThrottledCost: 5, SuccessIncrement: 1}
}

// Validate reports settings that cannot work, naming the field.
func (c *TokenBucketConfig) Validate() error {
	capacity := cmp.Or(c.Capacity, DefaultCapacity)
	const hint = "; use 0 for the default"
	fields := [...]validate.Field{
		{Name: "TokenBucketConfig.Capacity", Value: c.Capacity, Hint: hint},
		{Name: "TokenBucketConfig.TransientCost", Value: c.TransientCost, Hint: hint},
		{Name: "TokenBucketConfig.TimeoutCost", Value: c.TimeoutCost, Hint: hint},
		{Name: "TokenBucketConfig.ThrottledCost", Value: c.ThrottledCost, Hint: hint},
		{Name: "TokenBucketConfig.SuccessIncrement", Value: c.SuccessIncrement, Hint: hint},
	}
	if err := validate.NonNegative(ErrInvalidConfig, fields[:]...); err != nil {
		return err
	}
	defaults := [...]int64{DefaultTransientCost, DefaultTimeoutCost, DefaultThrottledCost}
	for i, f := range fields[1:4] {
		if cost := cmp.Or(f.Value.(int64), defaults[i]); cost > capacity {
			return fmt.Errorf("%w: %s %d exceeds Capacity %d, so no such retry could ever be paid for", ErrInvalidConfig, f.Name, cost, capacity)
		}
	}
	return nil
}

// TokenBucket is the AWS SDKs' standard-mode retry quota (its costs are a
// [TokenBucketConfig]; the zero one is Retry Behavior 2.1's, [AWS2026Quota],
// and [AWSStandardQuota] is 2.0's): a bucket of tokens
// from which every retry withdraws a cost and into which every success puts
// some back. While the dependency is healthy the bucket stays full and
// retries are free to smooth over the odd failure; when it fails
// persistently the bucket empties and retries stop at once, so the
// dependency sees only first attempts until calls start succeeding again.
// The bucket needs no clock: it refills with successes, not with time.
//
// Withdraw(c) takes the cost of class c, or reports false if fewer tokens
// are left. Record of a success puts back the cost of the retry that led to
// it (Attempt.Charged), or SuccessIncrement if it was a first attempt;
// failures change nothing (their retry pays). The count never goes below
// zero or above Capacity.
//
// A TokenBucket is safe for concurrent use; share one among all the
// goroutines calling one dependency. The zero TokenBucket is not usable;
// call NewTokenBucket.
type TokenBucket struct {
	// Read-only after NewTokenBucket.
	capacity int64
	incr     int64
	cost     [failure.Permanent]int64 // by Class; Permanent is never retried

	_ [cacheLine]byte
	// tokens is the only mutable state: one atomic word, updated with
	// compare-and-swap, on a line of its own. A full bucket is only read.
	// It is not sharded: the point of the bucket is that empty stops
	// retries at once, which shards would blur.
	tokens atomic.Int64
	_      [cacheLine - 8]byte
}

// NewTokenBucket validates cfg and returns a full bucket.
func NewTokenBucket(cfg TokenBucketConfig) (*TokenBucket, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &TokenBucket{
		capacity: cmp.Or(cfg.Capacity, DefaultCapacity),
		incr:     cmp.Or(cfg.SuccessIncrement, DefaultSuccessIncrement),
	}
	b.cost[failure.Transient] = cmp.Or(cfg.TransientCost, DefaultTransientCost)
	b.cost[failure.Timeout] = cmp.Or(cfg.TimeoutCost, DefaultTimeoutCost)
	b.cost[failure.Throttled] = cmp.Or(cfg.ThrottledCost, DefaultThrottledCost)
	b.tokens.Store(b.capacity)
	return b, nil
}

// Withdraw takes the cost of a retry after a failure of class c and
// reports whether there were enough tokens. A Permanent failure is never
// retried, so it reports false and takes nothing.
func (b *TokenBucket) Withdraw(c failure.Class) bool {
	if c >= failure.Permanent {
		return false
	}
	cost := b.cost[c]
	for {
		t := b.tokens.Load()
		if t < cost {
			return false
		}
		if b.tokens.CompareAndSwap(t, t-cost) {
			return true
		}
	}
}

// Record puts tokens back for a success: the cost of the retry that led to
// it (a.Charged) when a.N > 1, SuccessIncrement for a first attempt. A
// failure changes nothing.
func (b *TokenBucket) Record(a Attempt) {
	if a.Failed {
		return
	}
	n := b.incr
	if a.N > 1 && a.Charged < failure.Permanent {
		n = b.cost[a.Charged]
	}
	b.deposit(n)
}

// deposit adds n tokens, capped at capacity. A full bucket is only read:
// on the happy path, where the bucket stays full, no core writes the
// shared cache line.
func (b *TokenBucket) deposit(n int64) {
	for {
		t := b.tokens.Load()
		if t >= b.capacity {
			return
		}
		next := b.capacity
		if n < b.capacity-t { // not t+n, which could overflow
			next = t + n
		}
		if b.tokens.CompareAndSwap(t, next) {
			return
		}
	}
}

// Refund puts back the cost of a retry after a failure of class c that
// was withdrawn and then not made (a guard rejected it, or the caller gave
// up), so that a local rejection costs the bucket nothing.
func (b *TokenBucket) Refund(c failure.Class) {
	if c < failure.Permanent {
		b.deposit(b.cost[c])
	}
}

// Tokens returns the tokens in the bucket now.
func (b *TokenBucket) Tokens() int64 { return b.tokens.Load() }

// Capacity returns the most tokens the bucket holds.
func (b *TokenBucket) Capacity() int64 { return b.capacity }
