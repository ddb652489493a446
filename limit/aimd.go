package limit

import (
	"cmp"
	"fmt"
	"time"
)

// Defaults applied to zero fields of [AIMDConfig]. BackoffRatio, MaxLimit
// and Timeout are Netflix concurrency-limits' AIMDLimit defaults;
// InitialLimit and MinLimit are this package's (Netflix starts at and
// never goes below 20, more than a server with a few workers can run at
// once).
const (
	DefaultAIMDInitialLimit = 20
	DefaultAIMDMinLimit     = 1
	DefaultAIMDMaxLimit     = 200
	DefaultAIMDBackoffRatio = 0.9
	DefaultAIMDTimeout      = 5 * time.Second
)

// AIMDConfig configures an [AIMD] algorithm. The zero value starts at 20,
// stays within [1, 200], backs off by 0.9 and counts a request slower
// than 5 s as a drop.
type AIMDConfig struct {
	// InitialLimit is the limit before the first sample. Zero means
	// DefaultAIMDInitialLimit (20), clamped into [MinLimit, MaxLimit].
	InitialLimit int
	// MinLimit and MaxLimit bound the limit. Zero means
	// DefaultAIMDMinLimit (1) and DefaultAIMDMaxLimit (200).
	MinLimit, MaxLimit int
	// BackoffRatio multiplies the limit on a drop. Zero means
	// DefaultAIMDBackoffRatio (0.9); it must be in (0, 1).
	BackoffRatio float64
	// Timeout is the latency above which a served request counts as a
	// drop. Zero means DefaultAIMDTimeout (5 s).
	Timeout time.Duration
}

func (c *AIMDConfig) withDefaults() AIMDConfig {
	d := AIMDConfig{
		MinLimit:     cmp.Or(c.MinLimit, DefaultAIMDMinLimit),
		MaxLimit:     cmp.Or(c.MaxLimit, DefaultAIMDMaxLimit),
		BackoffRatio: cmp.Or(c.BackoffRatio, DefaultAIMDBackoffRatio),
		Timeout:      cmp.Or(c.Timeout, DefaultAIMDTimeout),
	}
	d.InitialLimit = min(max(cmp.Or(c.InitialLimit, DefaultAIMDInitialLimit), d.MinLimit), d.MaxLimit)
	return d
}

// Validate reports settings that cannot work, naming the field.
func (c *AIMDConfig) Validate() error {
	d := c.withDefaults()
	if err := checkLimits("AIMD", c.InitialLimit, c.MinLimit, c.MaxLimit, d.MinLimit, d.MaxLimit); err != nil {
		return err
	}
	switch {
	case !(d.BackoffRatio > 0 && d.BackoffRatio < 1): // also rejects NaN
		return fmt.Errorf("%w: AIMD BackoffRatio %v is outside (0, 1)", ErrInvalidConfig, c.BackoffRatio)
	case c.Timeout < 0:
		return fmt.Errorf("%w: AIMD Timeout %v is negative", ErrInvalidConfig, c.Timeout)
	}
	return nil
}

// AIMD is additive increase, multiplicative decrease, after Netflix
// concurrency-limits' AIMDLimit: a served request adds 1 to the limit
// when at least half the limit was in flight (an idle server learns
// nothing about its capacity); a drop, or a request slower than Timeout,
// multiplies it by BackoffRatio. It needs drops or timeouts to find the
// limit: latency alone below Timeout only raises it.
type AIMD struct {
	cfg   AIMDConfig
	limit int
}

// NewAIMD returns an AIMD algorithm at its initial limit.
func NewAIMD(cfg AIMDConfig) (*AIMD, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.withDefaults()
	return &AIMD{cfg: d, limit: d.InitialLimit}, nil
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return a.limit }

// Update applies one sample and returns the new limit.
func (a *AIMD) Update(s Sample) int {
	switch {
	case s.Dropped || s.RTT > a.cfg.Timeout:
		a.limit = int(float64(a.limit) * a.cfg.BackoffRatio)
	case s.InFlight*2 >= a.limit:
		a.limit++
	}
	a.limit = min(max(a.limit, a.cfg.MinLimit), a.cfg.MaxLimit)
	return a.limit
}
