package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/throttle"
)

// Budget kinds of a policySpec and of Policy.Budget.
const (
	budgetNone  = "none"
	budgetToken = "token"
	budgetRatio = "ratio"
)

// policySpec is a retry policy as a scenario runs it: what to build, not
// the built objects, because every run builds its own policy and budget
// on its own virtual clock.
type policySpec struct {
	name     string
	attempts int
	sched    backoff.Schedule
	budget   string  // budgetNone, budgetToken or budgetRatio
	ratio    float64 // share of requests for budgetRatio
	noFloor  bool    // budgetRatio without its floor of retries per second
	timeout  time.Duration
	guard    string                 // guardNone, guardBreaker or guardThrottle
	onEmpty  retry.BudgetExhaustion // what a call the empty budget stops does; zero for the library's default
}

// Guards of a policySpec: consulted before every attempt, told how it
// ended, as retry.Policy's Guards are.
const (
	guardNone     = ""
	guardBreaker  = "breaker"
	guardThrottle = "throttle"
)

// newGuard builds the spec's guard on the run's clock, with jitter drawn
// from a source seeded by the run.
func (s *policySpec) newGuard(now func() time.Time, seed uint64) (retry.Guard, error) {
	src := rand.NewPCG(seed, mix(seed))
	switch s.guard {
	case guardBreaker:
		return breaker.New(breaker.Settings{Now: now, Rand: src})
	case guardThrottle:
		return throttle.NewAdaptive(throttle.AdaptiveSettings{Now: now, Rand: src})
	}
	return nil, fmt.Errorf("%w: unknown guard %q", ErrInvalidParams, s.guard)
}

// withDefaults returns p with the documented defaults of its zero fields
// filled in (the schedule keeps its own: backoff.Schedule resolves them).
func (p Policy) withDefaults() Policy {
	if p.Name == "" {
		p.Name = "yours"
	}
	if p.Attempts == 0 {
		p.Attempts = retry.DefaultMaxAttempts
	}
	if p.Budget == "" {
		p.Budget = budgetToken
	}
	if p.BudgetRatio == 0 {
		p.BudgetRatio = budget.DefaultRatio
	}
	return p
}

// Fields returns the policy's fields as a policy file names them, with
// the defaults filled in where p leaves a field zero: name, attempts,
// base, cap, jitter and budget, then ratio for a ratio budget and
// attempt_timeout when set. Durations are strings ("50ms").
func (p Policy) Fields() map[string]any {
	p = p.withDefaults()
	m := map[string]any{
		"name":     p.Name,
		"attempts": p.Attempts,
		"base":     p.Backoff.Temp(0, false).String(),
		"cap":      p.Backoff.Temp(1<<20, false).String(),
		"jitter":   p.Backoff.Jitter.String(),
		"budget":   p.Budget,
	}
	if p.Budget == budgetRatio {
		m["ratio"] = p.BudgetRatio
	}
	if p.AttemptTimeout > 0 {
		m["attempt_timeout"] = p.AttemptTimeout.String()
	}
	return m
}

// specOf turns a user's Policy into a spec, applying its documented
// defaults.
func specOf(p Policy) (policySpec, error) {
	p = p.withDefaults()
	s := policySpec{name: p.Name, attempts: p.Attempts, sched: p.Backoff, budget: p.Budget,
		ratio: p.BudgetRatio, timeout: p.AttemptTimeout}
	switch {
	case s.attempts < 0:
		return s, fmt.Errorf("%w: policy %q: Attempts %d is negative", ErrInvalidParams, s.name, p.Attempts)
	case s.budget != budgetNone && s.budget != budgetToken && s.budget != budgetRatio:
		return s, fmt.Errorf("%w: policy %q: Budget %q is not none, token or ratio", ErrInvalidParams, s.name, p.Budget)
	case !(s.ratio > 0 && s.ratio <= 1):
		return s, fmt.Errorf("%w: policy %q: BudgetRatio %v is outside (0, 1]", ErrInvalidParams, s.name, p.BudgetRatio)
	case p.AttemptTimeout < 0:
		return s, fmt.Errorf("%w: policy %q: AttemptTimeout %v is negative", ErrInvalidParams, s.name, p.AttemptTimeout)
	}
	if err := s.sched.Validate(); err != nil {
		return s, fmt.Errorf("%w: policy %q: %w", ErrInvalidParams, s.name, err)
	}
	return s, nil
}

// pure reports whether a policy built from s has neither guard nor
// budget: its Admit and Done read no clock and touch nothing that other
// calls share, so a model may play its calls out ahead of the clock.
func (s *policySpec) pure() bool { return s.guard == guardNone && s.budget == budgetNone }

// build returns the run's own retry.Policy, with its budget and guard on
// the run's virtual clock; the guard's jitter is seeded by a draw from e.
// The models drive the policy's state machine (retry.Call), which tells
// the budget and the guard about every attempt.
func (s *policySpec) build(e *engine) (*retry.Policy, error) {
	var guards []retry.Guard
	if s.guard != guardNone {
		g, err := s.newGuard(e.Now, e.u64())
		if err != nil {
			return nil, err
		}
		guards = []retry.Guard{g}
	}
	b, err := s.newBudget(e.Now)
	if err != nil {
		return nil, err
	}
	p, err := retry.New(retry.Config{MaxAttempts: s.attempts, Backoff: s.sched, Budget: b,
		AttemptTimeout: s.timeout, Guards: guards, OnBudgetExhausted: s.onEmpty})
	if err != nil {
		return nil, fmt.Errorf("%w: policy %q: %w", ErrInvalidParams, s.name, err)
	}
	return p, nil
}

func (s *policySpec) newBudget(now func() time.Time) (budget.Budget, error) {
	switch s.budget {
	case budgetToken:
		return budget.NewTokenBucket(budget.TokenBucketConfig{})
	case budgetRatio:
		return budget.NewRatio(budget.RatioConfig{Ratio: s.ratio, NoFloor: s.noFloor, Now: now})
	default:
		//unherdvet:ignore misuse the simulator models a policy without a budget on purpose, to compare it
		return budget.Unlimited, nil
	}
}

// Standard schedules of the scenarios.

// immediate retries back to back: no backoff at all.
func immediate() backoff.Schedule {
	//unherdvet:ignore misuse the simulator models immediate retries on purpose, to compare them
	return backoff.Schedule{Immediate: true}
}

// fixed waits exactly d before every retry.
func fixed(d time.Duration) backoff.Schedule {
	//unherdvet:ignore misuse the simulator models a schedule without jitter on purpose, to compare it
	return backoff.Schedule{Base: d, ThrottledBase: d, Cap: d, Constant: true, Jitter: backoff.None}
}

// exponential is capped exponential backoff with jitter j.
func exponential(base, cap time.Duration, j backoff.Jitter) backoff.Schedule {
	return backoff.Schedule{Base: base, ThrottledBase: base, Cap: cap, Jitter: j}
}
