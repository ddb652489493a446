package retry

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/validate"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/timeout"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
)

// Defaults applied to zero fields of [Config]; each field's doc states its
// own.
const (
	defaultMaxAttempts    = 3
	defaultMaxServerDelay = 30 * time.Second
	defaultServerJitter   = 0.1
	defaultNestedAttempts = 1
)

// BudgetExhaustion is what a call does when the budget refuses its retry;
// see Config.OnBudgetExhausted. The zero value is WaitSchedule.
type BudgetExhaustion uint8

const (
	// WaitSchedule waits at the pace the rest of the schedule would have
	// retried (one jittered draw from the mean of the capped delays of
	// the retries left, from the throttled base after a throttling
	// error, and at least a server's delay), then returns
	// ErrBudgetExhausted: an empty budget does not speed up a caller that
	// loops. The default (the zero value).
	WaitSchedule BudgetExhaustion = iota
	// ReturnAtOnce returns ErrBudgetExhausted at once.
	ReturnAtOnce
	// WaitRetryDelay waits the delay the refused retry itself would have
	// waited (from the throttled base after a throttling error, or the
	// server's delay if longer), then returns ErrBudgetExhausted. It is
	// the AWS SDKs' rule for long-polling operations (SQS ReceiveMessage
	// and the like), as "Retry Behavior 2.1" specifies it; the SDKs for
	// Java v2 and Rust test it (1 s after a throttling error), while
	// aws-sdk-go-v2 waits from the normal base instead (50 ms), and
	// unherd follows the specification.
	WaitRetryDelay
)

// ErrInvalidConfig is wrapped by every error Validate and New return.
var ErrInvalidConfig = newSentinel("retry: invalid config")

// Config configures a [Policy]. The zero value is safe and is what most
// callers want: 3 attempts (the first plus 2 retries), full jitter from a
// 50 ms base (1 s after a throttling error) capped at 20 s, no per-attempt
// timeout, server-directed delays honoured up to 30 s, a single attempt
// when the context says an outer layer already retries, and a retry
// budget (a token bucket) of the Policy's own: the AWS SDKs' "Retry
// Behavior 2.1" ([AWS2026]) but for server delays; see the package doc
// for why.
type Config struct {
	// MaxAttempts bounds the attempts of one call, counting the first:
	// 3 means one attempt and up to two retries; 1 disables retries.
	// Zero means 3.
	MaxAttempts int

	// Backoff is the delay schedule between attempts. The zero value is
	// full jitter, base 50 ms, throttled base 1 s, cap 20 s.
	Backoff backoff.Schedule

	// AttemptTimeout bounds each attempt with a child context. Its expiry
	// is a retryable Timeout; the caller's own deadline is never retried.
	// Zero means no per-attempt timeout.
	AttemptTimeout time.Duration

	// Timeouts, if set, supplies each attempt's timeout at run time (an
	// adaptive timeout that tracks latency) and overrides AttemptTimeout.
	Timeouts timeout.Source

	// MaxServerDelay bounds a delay the server asked for (Retry-After,
	// gRPC pushback): when the server asks for longer, the loop stops with
	// ErrServerDelayTooLong instead of coming back before it allowed, or,
	// with ClampServerDelay, waits MaxServerDelay. Zero means
	// 30 s.
	//
	// A server-directed delay is a floor over the schedule, never a
	// replacement for it: the wait is the longer of the schedule's own
	// jittered delay for this retry and the server's delay (plus
	// ServerJitter), so a thousand clients told "Retry-After: 0", or given
	// an HTTP-date in the past, still spread over the schedule's window
	// instead of coming back at one instant.
	MaxServerDelay time.Duration

	// ClampServerDelay makes a server delay above MaxServerDelay wait
	// MaxServerDelay (still at least the schedule's delay) instead of
	// stopping the call. False, the default, stops it.
	ClampServerDelay bool

	// MaxServerExtra, if positive, bounds how far a server-directed delay
	// may take the wait beyond the schedule's delay: the wait is at most
	// the schedule's delay plus MaxServerExtra. The AWS SDKs' retry
	// behaviour 2.1 clamps x-amz-retry-after this way, with 5 s. Zero
	// means no such bound.
	MaxServerExtra time.Duration

	// ServerJitter is the largest fraction of a server-directed delay added
	// on top of it, so a thousand clients told "5 s" do not return in one
	// wall. It is only ever added, never subtracted. Zero means
	// 0.1 (up to 10% more); a negative value
	// means none (the wait is then exactly the longer of the server's
	// delay and the schedule's). It must be at most 1.
	ServerJitter float64

	// NestedAttempts replaces MaxAttempts when the context carries the mark
	// of WithOuterRetry: the call is made while serving a caller that
	// retries, so retrying here too would multiply attempts. Zero means
	// 1: no retries at this layer.
	NestedAttempts int

	// Classify decides how a failed attempt is treated. Nil means
	// DefaultClassify; a custom classifier can call DefaultClassify for
	// errors it does not recognise. It is called once per failed attempt,
	// and its answer goes to the guards, the budget and the retry
	// decision alike. It is not called for a local rejection (an error
	// that is ErrRejected) or when the caller's context has ended.
	Classify func(error) failure.Class

	// Budget is consulted before every retry and told about every attempt.
	// Nil means a token bucket of its own with the AWS SDKs' "Retry
	// Behavior 2.1" quota (budget.TokenBucketConfig{}, which is
	// budget.AWS2026Quota, not the 2.0 quota of budget.AWSStandardQuota:
	// 500 tokens, a retry costs 14, 5 after a throttling error, a
	// first-attempt success puts 1 back), built by New, so each Policy,
	// that is each dependency, has its own. Share one
	// budget among Policies to pool them; use budget.Unlimited to opt out
	// (every retry the other rules allow is made).
	Budget budget.Budget

	// OnBudgetExhausted says what a call does when the budget refuses its
	// retry. WaitSchedule, the default, first waits at the pace of the
	// retries the call had left: one draw, with the schedule's jitter,
	// from the mean of their capped delays (from the throttled base
	// after a throttling error), and at least the server's delay when
	// the failure named one. A caller that loops (a worker polling a
	// queue, a closed population) so comes back with a new call as often
	// as the call would have retried without a budget, not sooner, and
	// not so much later that it misses the dependency's return. The wait
	// never reaches the deadline (when the draw would, the wait is drawn
	// again within the time left, from the refused retry's delay up) and
	// is cut short if the context ends. WaitRetryDelay waits only the
	// refused retry's own delay: with a schedule that grows, a caller
	// that loops comes back far sooner than its retries would have, so
	// it offers several times the load (see the package doc, "A refused
	// retry still waits"); it is the AWS SDKs' rule for long-polling
	// operations. ReturnAtOnce returns ErrBudgetExhausted at once: for
	// request paths whose caller does not loop and wants the error now.
	OnBudgetExhausted BudgetExhaustion

	// Guards are consulted before every attempt, in order, and told how it
	// ended: circuit breakers, client-side throttles. A rejection stops the
	// call at once with ErrRejected and is never retried. Nil means none.
	Guards []admission.Guard

	// Observer, if set, receives an observe.Event for every attempt
	// (Attempt), every retry before its wait (Retry, with the failed
	// attempt's error, its class and the delay about to be waited), and
	// the call's end (Success, or GiveUp once with its reason: attempts,
	// budget or deadline exhausted, a permanent error, a local rejection,
	// the caller's cancellation), with the call's context, outside any
	// lock, before Do returns. It is the call's one event stream: a
	// function is an observer through observe.Func, and observe.Multi
	// sends the stream to several. Nil means none, at no cost.
	Observer observe.Observer

	// Rand supplies the random draws for jitter. Nil means the global
	// math/rand/v2 source. A Policy used from many goroutines needs a
	// source that is safe for concurrent use; seeded sources are for tests.
	Rand rand.Source
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	if err := validate.NonNegative(ErrInvalidConfig,
		validate.Field{Name: "MaxAttempts", Value: c.MaxAttempts, Hint: "; use 1 to disable retries or 0 for the default of 3"},
		validate.Field{Name: "NestedAttempts", Value: c.NestedAttempts, Hint: "; use 0 for the default of 1"},
		validate.Field{Name: "AttemptTimeout", Value: c.AttemptTimeout, Hint: "; use 0 for no per-attempt timeout"},
		validate.Field{Name: "MaxServerDelay", Value: c.MaxServerDelay, Hint: "; use 0 for the default of 30s"},
	); err != nil {
		return err
	}
	switch {
	case !(c.ServerJitter <= 1): // also rejects NaN
		return fmt.Errorf("%w: ServerJitter %v is above 1 (or NaN); use a negative value for none", ErrInvalidConfig, c.ServerJitter)
	case c.OnBudgetExhausted > WaitRetryDelay:
		return fmt.Errorf("%w: OnBudgetExhausted %d is not WaitSchedule, ReturnAtOnce or WaitRetryDelay", ErrInvalidConfig, c.OnBudgetExhausted)
	case c.MaxServerExtra < 0:
		return fmt.Errorf("%w: MaxServerExtra %v is negative; use 0 for no bound", ErrInvalidConfig, c.MaxServerExtra)
	}
	for i, g := range c.Guards {
		if g == nil {
			return fmt.Errorf("%w: Guards[%d] is nil", ErrInvalidConfig, i)
		}
	}
	if err := c.Backoff.Validate(); err != nil {
		return fmt.Errorf("%w: Backoff: %w", ErrInvalidConfig, err)
	}
	return nil
}
