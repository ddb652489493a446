package core

import (
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
)

// AWSStandard is retry.AWSStandard.
func AWSStandard() Config {
	return Config{
		MaxAttempts:       3,
		Backoff:           backoff.Schedule{Base: time.Second, ThrottledBase: time.Second, Cap: 20 * time.Second, Jitter: backoff.Full, CapAfterDraw: true},
		Budget:            newBucket(budget.AWSStandardQuota()),
		OnBudgetExhausted: ReturnAtOnce,
	}
}

// AWS2026 is retry.AWS2026.
func AWS2026() Config {
	return Config{
		MaxAttempts:       3,
		Backoff:           backoff.Schedule{Base: 50 * time.Millisecond, ThrottledBase: time.Second, Cap: 20 * time.Second, Jitter: backoff.Full},
		Budget:            newBucket(budget.AWS2026Quota()),
		ClampServerDelay:  true,
		MaxServerExtra:    5 * time.Second,
		ServerJitter:      -1,
		OnBudgetExhausted: ReturnAtOnce,
	}
}

// newBucket builds a bucket from a preset's configuration, which is valid.
func newBucket(cfg budget.TokenBucketConfig) *budget.TokenBucket {
	b, err := budget.NewTokenBucket(cfg)
	if err != nil {
		panic("retry: invalid preset quota: " + err.Error()) // unreachable: the presets are valid
	}
	return b
}
