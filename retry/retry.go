package retry

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/draws"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/timeout"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
)

// Policy runs calls with retries as its Config describes. It is immutable
// after New and safe for concurrent use; build one per dependency and share
// it. The zero Policy is not usable; call New or Default.
type Policy struct {
	maxAttempts    int
	nestedAttempts int
	backoff        backoff.Schedule
	attemptTimeout time.Duration
	timeouts       timeout.Source
	maxServerDelay time.Duration
	clampServer    bool
	maxServerExtra time.Duration
	serverJitter   float64 // <= 0: none
	classifier     func(error) failure.Class
	budget         budget.Budget
	observer       observe.Observer
	hooked         bool           // guards, an observer or a tracking budget: Admit and Done take their slow paths
	tracker        budget.Tracker // the budget, if it counts attempts in flight
	onExhausted    BudgetExhaustion
	guards         []admission.Guard
	ctxGuards      []admission.ContextGuard // guards[i] as a ContextGuard, or nil; nil if none is
	rand           func() uint64
}

// New validates cfg and returns a Policy built from it.
func New(cfg Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := cfg.Budget
	if b == nil {
		// A bucket of its own: one Policy per dependency, so one budget
		// per dependency.
		tb, err := budget.NewTokenBucket(budget.TokenBucketConfig{})
		if err != nil {
			return nil, fmt.Errorf("%w: default budget: %w", ErrInvalidConfig, err)
		}
		b = tb
	}
	p := &Policy{
		maxAttempts:    cmp.Or(cfg.MaxAttempts, defaultMaxAttempts),
		nestedAttempts: cmp.Or(cfg.NestedAttempts, defaultNestedAttempts),
		backoff:        cfg.Backoff,
		attemptTimeout: cfg.AttemptTimeout,
		timeouts:       cfg.Timeouts,
		maxServerDelay: cmp.Or(cfg.MaxServerDelay, defaultMaxServerDelay),
		clampServer:    cfg.ClampServerDelay,
		maxServerExtra: cfg.MaxServerExtra,
		serverJitter:   cmp.Or(cfg.ServerJitter, defaultServerJitter),
		classifier:     cfg.Classify,
		budget:         b,
		observer:       cfg.Observer,
		onExhausted:    cfg.OnBudgetExhausted,
		guards:         append([]admission.Guard(nil), cfg.Guards...),
		rand:           draws.From(cfg.Rand),
	}
	p.ctxGuards = contextGuards(p.guards)
	p.tracker, _ = b.(budget.Tracker)
	p.hooked = len(p.guards) != 0 || p.observer != nil || p.tracker != nil
	return p, nil
}

// Default returns a Policy with the zero Config's defaults. Each call
// returns a new Policy with a retry budget of its own, so call it once per
// dependency and keep the result: a Policy made per call would start every
// call with a full budget, and the budget would never stop a storm.
func Default() *Policy {
	p, err := New(Config{})
	if err != nil {
		panic("retry: zero Config is invalid: " + err.Error()) // unreachable: the zero Config is valid
	}
	return p
}

// MaxAttempts returns the attempt limit for a call, counting the first.
func (p *Policy) MaxAttempts() int { return p.maxAttempts }

// AttemptLimit returns the attempt limit of a call that [Policy.Begin]
// starts with nested: NestedAttempts for a nested call, MaxAttempts
// otherwise. (It was named Attempts, the name now of the attempts loop.)
func (p *Policy) AttemptLimit(nested bool) int {
	if nested {
		return p.nestedAttempts
	}
	return p.maxAttempts
}

// Do calls fn until it succeeds or the policy stops it, and returns nil or
// an [*Error] that wraps the stop reason and fn's last error. fn receives a
// context bounded by the per-attempt timeout, if one is set.
func (p *Policy) Do(ctx context.Context, fn func(context.Context) error) error {
	_, err := DoValue(ctx, p, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

// DoValue is Do for an operation that returns a value: it returns the value
// of the first successful attempt, or the last attempt's value and an
// [*Error].
//
// On failure the value is whatever the last attempt that ran returned
// with its error: usually the zero T, but an operation that returns a
// partial result with its error, or one wrapped with [OnResult] (a job
// still pending), hands it back; the zero T if no attempt ran. A value
// that holds resources is the caller's to release, as after a success.
//
// With Config.AttemptTimeout, a failed attempt's context is cancelled
// when it returns; the successful attempt's context is not. Its timer is
// stopped and it is released from the caller's context, so the value (a
// response body, *sql.Rows) stays usable after DoValue returns, until the
// caller closes it; a later cancellation of the caller's context no
// longer reaches it, so bound its use by the value's own means.
//
// DoValue is a loop around a [Call]: Admit, run fn between
// [Policy.StartAttempt] and [Attempt.End], then Succeeded, or Failed,
// which waits. A first
// attempt that succeeds costs one call of fn and nothing else: no
// allocation, no goroutine, no timer, no clock read (unless a
// TimeoutSource needs the attempt's latency). A retry with a zero delay
// arms no timer either. The waits of one call share one timer, taken from
// a pool shared by all calls and given back when the call ends, so a call
// that waits allocates nothing for it once the pool is warm.
func DoValue[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	// Whether an outer layer retries matters only after a failure, and
	// reading ctx's values costs more than the rest of a success: Failed
	// finds out.
	c := p.Begin(false)
	var last T
	for {
		if err := c.Admit(ctx); err != nil {
			return last, err
		}
		var err error
		if len(p.guards) == 0 && p.tracker == nil {
			last, err = runAttempt(ctx, p, fn)
		} else {
			last, err = guardedAttempt(ctx, p, &c, fn)
		}
		if err == nil {
			if p.hooked || c.w.t != nil {
				c.Succeeded()
			} else {
				c.succeeded() // Succeeded's common case, inlined here: it is too large to be itself
			}
			return last, nil
		}
		if err = c.Failed(ctx, err); err != nil {
			return last, err
		}
	}
}

// ErrRetryableResult is the error of an attempt whose result asked for
// another try; see [OnResult].
var ErrRetryableResult = newSentinel("retry: result asks for another attempt")

// OnResult wraps fn so that a result for which again reports true counts
// as a failed attempt: fn's value is kept and its error is
// ErrRetryableResult, a Transient failure, retried by the policy's rules
// like any other. Use it for an answer that says "not yet" (a job still
// pending, an empty poll). If the call runs out of attempts, DoValue
// returns the last such value with an *Error that wraps
// ErrRetryableResult. again is not called for attempts that fail.
func OnResult[T any](fn func(context.Context) (T, error), again func(T) bool) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		v, err := fn(ctx)
		if err == nil && again(v) {
			err = ErrRetryableResult
		}
		return v, err
	}
}

// guardedAttempt runs one admitted attempt when there are guards: an
// attempt whose fn panics is reported to them as abandoned before the
// panic goes on up the stack, or a half-open breaker would keep its probe
// slot forever.
func guardedAttempt[T any](ctx context.Context, p *Policy, c *Call, fn func(context.Context) (T, error)) (T, error) {
	returned := false
	defer func() {
		if !returned {
			c.abandon(nil)
		}
	}()
	v, err := runAttempt(ctx, p, fn)
	returned = true
	return v, err
}

// Failed reports the failure of the attempt in flight and waits for the
// next one: the real-time step over [Call.Done] that every driver of a
// Call takes after a failed attempt. err is the attempt's error, as
// [Attempt.End] returned it. Failed returns nil when the next attempt may
// start (go back to [Call.Admit]), or the call's error ([*Error]) when the
// call has ended.
//
//   - If ctx has ended, the caller gave up, which says nothing about the
//     dependency: Failed returns [Call.Cancel]'s error.
//   - After the first attempt, a ctx that carries [WithOuterRetry] makes
//     the call nested: NestedAttempts replaces MaxAttempts.
//   - Done decides, with the current time only when ctx has a deadline
//     (the clock is not read otherwise) and a draw from Config.Rand, or
//     from math/rand/v2 without one.
//   - The wait the Decision asks for, never past ctx's deadline (Done
//     does not start one that would end at or after it), is cut short
//     when ctx ends; a wait cut short cancels the call.
//
// The waits of one call share one timer, from a pool shared by all calls
// and given back when the call ends (here, or in [Call.Succeeded],
// [Call.Cancel] or a rejection by [Call.Admit]); a zero delay arms no
// timer.
//
//go:noinline
func (c *Call) Failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return c.Cancel(err, context.Cause(ctx))
	}
	if c.attempt == 1 && HasOuterRetry(ctx) {
		c.max = c.p.nestedAttempts
	}
	// The clock is read only when a deadline needs it.
	var now time.Time
	deadline, ok := ctx.Deadline()
	if ok {
		now = time.Now()
	}
	d := c.Done(now, deadline, err, c.p.rand())
	if d.Reason != nil {
		if d.Wait && d.Delay > 0 {
			c.w.wait(ctx, d.Delay, now) // the call has ended; a cancellation only cuts the wait short
		}
		c.w.release()
		return c.Err(d)
	}
	if d.Delay > 0 && !c.w.wait(ctx, d.Delay, now) {
		return c.Cancel(nil, context.Cause(ctx))
	}
	return nil
}

// Succeeded reports that the attempt in flight succeeded, which ends the
// call: what [Call.Done] does for a nil error, and the call's wait timer,
// if it had one, goes back to the pool.
func (c *Call) Succeeded() {
	if c.p.hooked {
		c.succeededHooked()
	} else {
		c.succeeded()
	}
	c.w.release()
}
