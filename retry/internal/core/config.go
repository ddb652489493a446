package core

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

// BudgetExhaustion is retry.BudgetExhaustion, which documents it and its
// values.
type BudgetExhaustion uint8

const (
	WaitSchedule BudgetExhaustion = iota
	ReturnAtOnce
	WaitRetryDelay
)

// ErrInvalidConfig is wrapped by every error Validate and New return.
var ErrInvalidConfig = newSentinel("retry: invalid config")

// Config is retry.Config, which documents it; package retry converts
// one to the other, so the two keep the same fields.
type Config struct {
	MaxAttempts       int
	Backoff           backoff.Schedule
	AttemptTimeout    time.Duration
	Timeouts          timeout.Source
	MaxServerDelay    time.Duration
	ClampServerDelay  bool
	MaxServerExtra    time.Duration
	ServerJitter      float64
	NestedAttempts    int
	Classify          func(error) failure.Class
	Budget            budget.Budget
	OnBudgetExhausted BudgetExhaustion
	Guards            []admission.Guard
	Observer          observe.Observer
	Rand              rand.Source
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
