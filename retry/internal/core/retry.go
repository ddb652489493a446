package core

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

// Policy is retry.Policy's engine.
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
	bare           bool           // no guards, tracking budget or attempt timeout: an attempt is the call of fn alone (beside hooked, in its padding)
	tracker        budget.Tracker // the budget, if it counts attempts in flight
	onExhausted    BudgetExhaustion
	guards         []admission.Guard
	rand           func() uint64
}

// New builds a Policy; see retry.New.
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
	p.tracker, _ = b.(budget.Tracker)
	p.hooked = len(p.guards) != 0 || p.observer != nil || p.tracker != nil
	p.bare = len(p.guards) == 0 && p.tracker == nil && p.timeouts == nil && p.attemptTimeout <= 0
	return p, nil
}

// Default is New of the zero Config.
func Default() *Policy {
	p, err := New(Config{})
	if err != nil {
		panic("retry: zero Config is invalid: " + err.Error()) // unreachable: the zero Config is valid
	}
	return p
}

// AttemptLimit is engine.AttemptLimit for a call nested or not.
func (p *Policy) AttemptLimit(nested bool) int {
	if nested {
		return p.nestedAttempts
	}
	return p.maxAttempts
}

// Do is retry.Policy.Do.
func (p *Policy) Do(ctx context.Context, fn func(context.Context) error) error {
	_, err := DoValue(ctx, p, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

// DoValue is retry.DoValue.
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
		switch {
		case p.bare:
			last, err = fn(ctx) // runAttempt's common case, without its frame
		case len(p.guards) == 0 && p.tracker == nil:
			last, err = runAttempt(ctx, p, fn)
		default:
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

// ErrRetryableResult is retry.ErrRetryableResult.
var ErrRetryableResult = newSentinel("retry: result asks for another attempt")

// OnResult is retry.OnResult.
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

// Failed is engine.Call.Failed.
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

// Succeeded is engine.Call.Succeeded.
func (c *Call) Succeeded() {
	if c.p.hooked {
		c.succeededHooked()
	} else {
		c.succeeded()
	}
	c.w.release()
}
