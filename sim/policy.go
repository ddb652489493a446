package sim

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	retryengine "github.com/unherd/unherd/retry/engine"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
	"github.com/unherd/unherd/throttle"
)

// Budget kinds of Policy.Budget.
const (
	budgetNone  = "none"
	budgetToken = "token"
	budgetRatio = "ratio"
)

// MaxPolicyAttempts is the most attempts a Policy may set: more are a
// mistake, not a policy, and would make the simulated storm grow without
// meaning.
const MaxPolicyAttempts = 100

// Policy is a retry policy as a user describes it, for the what-if
// analysis: the outage and storm scenarios run it beside unherd's
// default. Its retry settings are the library's own [retry.Config],
// defaulted and validated by [retry.New] as in production; each run
// builds its own policy, with its own budget on the run's virtual clock.
type Policy struct {
	// Name labels the policy in tables; empty means "yours".
	Name string
	// Retry is the policy's configuration. The simulator models
	// MaxAttempts (zero means 3, retry's default, at most
	// MaxPolicyAttempts), Backoff, OnBudgetExhausted and AttemptTimeout.
	// AttemptTimeout applies where callers wait on a server that can be
	// slow, the metastable scenario (see ValidateFor): the what-if's
	// dependency answers at once, so there it is refused rather than
	// ignored. Every other field must be left zero: the simulated
	// dependencies name no delay (Timeouts, an adaptive timeout, and the
	// server-delay fields would have no effect), their calls are not
	// nested (NestedAttempts), their errors are their own (Classify),
	// each run builds its own budget and draws from its own random
	// source (Budget, Guards, Rand: see Budget below), and the runs go on
	// in parallel (Observer). Validate refuses a
	// field the simulator cannot model, naming it.
	Retry retry.Config
	// Budget is "none", "token" (token bucket, AWS SDK defaults),
	// "ratio" (a share of requests over a window) or "" for unherd's
	// default (token): the retry budget each run builds on its own clock
	// and hands to retry.New as Config.Budget.
	Budget string
	// BudgetRatio is the ratio budget's share when Budget is "ratio"
	// (budget.RatioConfig.Ratio); zero means budget.DefaultRatio (0.1).
	BudgetRatio float64
}

// unmodelled lists the retry.Config fields the simulator cannot model,
// each with whether it is set and why it has no place in a run.
func unmodelled(c *retry.Config) []struct {
	field string
	set   bool
	why   string
} {
	const noDelay = "the simulated dependency names no delay of its own (no Retry-After), so it would have no effect; leave it zero"
	const ownRun = "each run builds its own from Budget and its random source; leave it nil"
	const parallel = "the simulator runs many calls at once in parallel runs; leave it nil"
	return []struct {
		field string
		set   bool
		why   string
	}{
		{"Retry.Timeouts", c.Timeouts != nil, "the simulator models a fixed attempt timeout only; set Retry.AttemptTimeout and leave it nil"},
		{"Retry.MaxServerDelay", c.MaxServerDelay != 0, noDelay},
		{"Retry.ClampServerDelay", c.ClampServerDelay, noDelay},
		{"Retry.MaxServerExtra", c.MaxServerExtra != 0, noDelay},
		{"Retry.ServerJitter", c.ServerJitter != 0, noDelay},
		{"Retry.NestedAttempts", c.NestedAttempts != 0, "the simulated calls are not made while serving a caller that retries; leave it zero"},
		{"Retry.Classify", c.Classify != nil, "the simulated dependency's errors are its own (down, overloaded), all transient; leave it nil"},
		{"Retry.Budget", c.Budget != nil, "a budget is shared state on a clock: " + ownRun + " (set Policy.Budget)"},
		{"Retry.Guards", len(c.Guards) > 0, "guards keep state on a clock: " + ownRun},
		{"Retry.Rand", c.Rand != nil, ownRun},
		{"Retry.Observer", c.Observer != nil, parallel},
	}
}

// Validate reports a setting of p the simulator refuses, as a
// *ParamError: one retry.New refuses, one the simulator cannot model
// (see Retry), more attempts than MaxPolicyAttempts, or a budget that is
// not none, token or ratio, or a ratio outside (0, 1].
func (p Policy) Validate() error {
	_, err := p.resolve()
	return err
}

// The uses of a Policy that ValidateFor judges it for.
const (
	// UseWhatIf is WhatIf: the outage and storm scenarios, whose
	// dependency answers every attempt at once.
	UseWhatIf = "whatif"
	// UseMetastable is the metastable scenario's row for a user's policy
	// (PolicyParams.SetPolicy): a server with workers and a queue,
	// whose callers time out.
	UseMetastable = "metastable"
)

// ValidateFor reports, as a *ParamError, a setting of p that Validate
// refuses or that the use named (UseWhatIf or UseMetastable) cannot
// apply. The what-if refuses Retry.AttemptTimeout: its dependency fails
// fast and answers within a round trip, so the timeout would never fire;
// the error says to judge it in the metastable scenario. An unknown use
// is an error wrapping ErrInvalidParams.
func (p Policy) ValidateFor(use string) error {
	if _, err := p.resolve(); err != nil {
		return err
	}
	switch use {
	case UseWhatIf:
		if p.Retry.AttemptTimeout != 0 {
			return &ParamError{Policy: cmp.Or(p.Name, "yours"), Field: "Retry.AttemptTimeout",
				Msg: "the what-if cannot apply it: its outage and storm scenarios' dependency fails fast and answers within a round trip, so no attempt would time out; " +
					"judge it in the metastable scenario, whose callers time out (unherd sim metastable --policy FILE, or the page's metastable scenario), and leave it out of the what-if"}
		}
	case UseMetastable:
	default:
		return fmt.Errorf("%w: policy %q: unknown use %q (want %q or %q)", ErrInvalidParams, p.Name, use, UseWhatIf, UseMetastable)
	}
	return nil
}

// resolve validates p and returns the retry.Policy its Retry builds
// (with an unlimited budget, for its resolved settings) and p with its
// name and budget kind defaulted.
func (p *Policy) resolve() (*retry.Policy, error) {
	if p.Name == "" {
		p.Name = "yours"
	}
	if p.Budget == "" {
		p.Budget = budgetToken
	}
	fail := func(field, format string, args ...any) error {
		return &ParamError{Policy: p.Name, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for _, u := range unmodelled(&p.Retry) {
		if u.set {
			return nil, fail(u.field, "the simulator cannot model it: %s", u.why)
		}
	}
	switch p.Budget {
	case budgetNone, budgetToken, budgetRatio:
	default:
		return nil, fail("Budget", "%q is not none, token or ratio", p.Budget)
	}
	if !(p.BudgetRatio >= 0 && p.BudgetRatio <= 1) {
		return nil, fail("BudgetRatio", "%v is outside (0, 1]; zero means %v", p.BudgetRatio, budget.DefaultRatio)
	}
	c := p.Retry
	c.Budget = budget.Unlimited
	rp, err := retry.New(c)
	if err != nil {
		field, msg := retryField(err)
		return nil, fail(field, "%s", msg)
	}
	if n := retryengine.AttemptLimit(context.Background(), rp); n > MaxPolicyAttempts {
		return nil, fail("Retry.MaxAttempts", "%d is above the limit of %d", n, MaxPolicyAttempts)
	}
	return rp, nil
}

// retryField splits an error of retry.New into the field it names
// ("Retry.MaxAttempts", "Retry.Backoff.Base") and what it says of it.
func retryField(err error) (field, msg string) {
	msg = strings.TrimPrefix(err.Error(), retry.ErrInvalidConfig.Error()+": ")
	field = "Retry"
	if f, _, ok := strings.Cut(msg, " "); ok {
		field += "." + strings.TrimSuffix(f, ":")
	}
	if inner, ok := strings.CutPrefix(msg, "Backoff: "+backoff.ErrInvalid.Error()+": "); ok {
		msg = inner
		if f, _, ok := strings.Cut(inner, " "); ok && (f == "Base" || f == "Cap") {
			field += "." + f
		}
	}
	return field, msg
}

// Fields returns the policy as a policy file writes it (the format
// cmd/unherd's whatif reads, documented in docs/policy.md), with the
// defaults filled in where p leaves a field zero (as retry.New and
// backoff.Schedule resolve them): name, attempts, base, cap, jitter and
// budget, then timeouts when an attempt timeout is set. Durations are
// strings ("50ms"). The budget is its kind ("none", "token") or, for a
// ratio budget, the mapping {"kind": "ratio", "ratio": share} with the
// share resolved; timeouts is {"attempt": "500ms"}. Marshalled as JSON,
// it reads back as a policy file that gives p again, its zero fields
// resolved. A policy Validate refuses gives its fields as they are set.
func (p Policy) Fields() map[string]any {
	attempts := p.Retry.MaxAttempts
	if rp, err := p.resolve(); err == nil {
		attempts = retryengine.AttemptLimit(context.Background(), rp)
	}
	b := p.Retry.Backoff
	m := map[string]any{
		"name":     p.Name,
		"attempts": attempts,
		"base":     b.Temp(0, false).String(),
		"cap":      b.Temp(1<<20, false).String(),
		"jitter":   b.Jitter.String(),
		"budget":   p.Budget,
	}
	if p.Budget == budgetRatio {
		m["budget"] = map[string]any{"kind": budgetRatio, "ratio": cmp.Or(p.BudgetRatio, budget.DefaultRatio)}
	}
	if p.Retry.AttemptTimeout != 0 {
		m["timeouts"] = map[string]any{"attempt": p.Retry.AttemptTimeout.String()}
	}
	return m
}

// policySpec is a retry policy as a scenario runs it: what to build, not
// the built objects, because every run builds its own policy and budget
// on its own virtual clock. It is a Policy with the settings only the
// scenarios' own rows use.
type policySpec struct {
	Policy
	noFloor bool   // budgetRatio without its floor of retries per second
	guard   string // guardNone, guardBreaker or guardThrottle
}

// spec is the scenario row called name: the retry configuration c with
// the budget of the given kind.
func spec(name string, c retry.Config, budget string) policySpec {
	return policySpec{Policy: Policy{Name: name, Retry: c, Budget: budget}}
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
func (s *policySpec) newGuard(now func() time.Time, seed uint64) (admission.Guard, error) {
	src := rand.NewPCG(seed, engine.Mix(seed))
	switch s.guard {
	case guardBreaker:
		return breaker.New(breaker.Settings{Now: now, Rand: src})
	case guardThrottle:
		return throttle.NewAdaptive(throttle.AdaptiveSettings{Now: now, Rand: src})
	}
	return nil, fmt.Errorf("%w: unknown guard %q", ErrInvalidParams, s.guard)
}

// specOf turns a user's Policy into a spec, validated for the use named
// (ValidateFor), with its name and budget kind defaulted; retry.New
// defaults the rest in every run.
func specOf(p Policy, use string) (policySpec, error) {
	if err := p.ValidateFor(use); err != nil {
		return policySpec{}, err
	}
	if _, err := p.resolve(); err != nil {
		return policySpec{}, err
	}
	return policySpec{Policy: p}, nil
}

// pure reports whether a policy built from s has neither guard nor
// budget: its Admit and Done read no clock and touch nothing that other
// calls share, so a model may play its calls out ahead of the clock.
func (s *policySpec) pure() bool { return s.guard == guardNone && s.Budget == budgetNone }

// build returns the run's own retry.Policy: the spec's retry.Config with
// its budget and guard, built on the run's virtual clock (the guard's
// jitter is seeded by a draw from e), through retry.New, which resolves
// its defaults. The models drive the policy's state machine
// (retryengine.Call), which tells the budget and the guard about every
// attempt.
func (s *policySpec) build(e *engine.Engine) (*retry.Policy, error) {
	c := s.Retry
	if s.guard != guardNone {
		g, err := s.newGuard(e.Now, e.Uint64())
		if err != nil {
			return nil, err
		}
		c.Guards = []admission.Guard{g}
	}
	b, err := s.newBudget(e.Now)
	if err != nil {
		return nil, err
	}
	c.Budget = b
	p, err := retry.New(c)
	if err != nil {
		return nil, fmt.Errorf("%w: policy %q: %w", ErrInvalidParams, s.Name, err)
	}
	return p, nil
}

func (s *policySpec) newBudget(now func() time.Time) (budget.Budget, error) {
	switch s.Budget {
	case budgetToken:
		return budget.NewTokenBucket(budget.TokenBucketConfig{})
	case budgetRatio:
		return budget.NewRatio(budget.RatioConfig{Ratio: s.BudgetRatio, NoFloor: s.noFloor, Now: now})
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
