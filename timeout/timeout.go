package timeout

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/unherd/unherd/internal/quantile"
	"github.com/unherd/unherd/retry"
)

// Defaults applied to zero fields of [Config].
const (
	// DefaultFalseTimeoutRate is the share of attempts allowed to time
	// out although they would have succeeded: 0.1%, the example of the
	// Amazon Builders' Library ("Timeouts, retries, and backoff with
	// jitter"), so the timeout is set from p99.9.
	DefaultFalseTimeoutRate = 0.001
	// DefaultMargin multiplies the percentile: the p99.9 of a window of
	// 8,192 to 16,384 latencies rests on its 8 to 16 largest, so it
	// wanders by tens of percent between refreshes, and a timeout set
	// exactly at it would time out more than the chosen rate. The margin
	// also lets the timeout grow with latency (see the package doc).
	DefaultMargin = 1.5
	// DefaultFloor is the shortest timeout: below about 10 ms, pauses on
	// the caller's own side (scheduling, garbage collection) become a
	// visible share of the latency a timeout measures.
	DefaultFloor = 10 * time.Millisecond
	// DefaultCeiling is the longest timeout, and the timeout used until
	// there are enough latencies.
	DefaultCeiling = 10 * time.Second
)

// ErrInvalidConfig is wrapped by every error Validate and New return.
var ErrInvalidConfig = errors.New("timeout: invalid config")

// Config configures an [Adaptive] timeout. The zero value sets each
// attempt's timeout to 1.5 times the p99.9 of recent successful
// latencies, within [10 ms, 10 s], and uses 10 s until it has 4,000
// latencies.
type Config struct {
	// FalseTimeoutRate is the share of attempts that may time out
	// although they would have succeeded; the timeout tracks the
	// 1-FalseTimeoutRate quantile of latency. It must be in (0, 0.5].
	// Zero means DefaultFalseTimeoutRate (0.001: p99.9).
	FalseTimeoutRate float64

	// Margin multiplies that quantile. It must be at least 1. Zero means
	// DefaultMargin (1.5).
	Margin float64

	// Floor is the shortest timeout. Zero means DefaultFloor (10 ms).
	Floor time.Duration

	// Ceiling is the longest timeout. Zero means DefaultCeiling (10 s).
	Ceiling time.Duration

	// Initial is the timeout until the estimator holds 4/FalseTimeoutRate
	// latencies (4,000 for p99.9, so that the quantile rests on at least
	// four of them). Zero means Ceiling.
	Initial time.Duration

	// Window is the number of latencies per half-window of the estimator;
	// it keeps the last Window to 2*Window. Zero means
	// 8/FalseTimeoutRate, at least 4,096 (8,192 for p99.9), rounded up to
	// a power of two.
	Window int
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	switch {
	case c.FalseTimeoutRate != 0 && !(c.FalseTimeoutRate > 0 && c.FalseTimeoutRate <= 0.5):
		return fmt.Errorf("%w: FalseTimeoutRate %v is outside (0, 0.5]", ErrInvalidConfig, c.FalseTimeoutRate)
	case c.Margin != 0 && !(c.Margin >= 1 && c.Margin <= 1e6):
		return fmt.Errorf("%w: Margin %v is outside [1, 1e6]", ErrInvalidConfig, c.Margin)
	case c.Floor < 0:
		return fmt.Errorf("%w: Floor %v is negative", ErrInvalidConfig, c.Floor)
	case c.Ceiling < 0:
		return fmt.Errorf("%w: Ceiling %v is negative", ErrInvalidConfig, c.Ceiling)
	case c.Initial < 0:
		return fmt.Errorf("%w: Initial %v is negative", ErrInvalidConfig, c.Initial)
	case c.Window < 0:
		return fmt.Errorf("%w: Window %d is negative", ErrInvalidConfig, c.Window)
	}
	floor, ceiling := cmp.Or(c.Floor, DefaultFloor), cmp.Or(c.Ceiling, DefaultCeiling)
	if floor > ceiling {
		return fmt.Errorf("%w: Floor %v is above Ceiling %v", ErrInvalidConfig, floor, ceiling)
	}
	return nil
}

// Adaptive is a per-attempt timeout that tracks latency: Margin times the
// 1-FalseTimeoutRate quantile of recent successful attempts, within
// [Floor, Ceiling]. It implements retry.TimeoutSource, so
// retry.Config{Timeouts: a} bounds every attempt with it. It is safe for
// concurrent use; share one per dependency. The zero Adaptive is not
// usable; call New.
type Adaptive struct {
	rate       float64
	margin     float64
	floor      time.Duration
	ceiling    time.Duration
	initial    time.Duration
	minSamples int
	est        *quantile.Estimator
}

var _ retry.TimeoutSource = (*Adaptive)(nil)

// New validates cfg and returns an Adaptive timeout with no latencies yet.
func New(cfg Config) (*Adaptive, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Adaptive{
		rate:    cmp.Or(cfg.FalseTimeoutRate, DefaultFalseTimeoutRate),
		margin:  cmp.Or(cfg.Margin, DefaultMargin),
		floor:   cmp.Or(cfg.Floor, DefaultFloor),
		ceiling: cmp.Or(cfg.Ceiling, DefaultCeiling),
	}
	a.initial = cmp.Or(cfg.Initial, a.ceiling)
	window := cfg.Window
	if window == 0 {
		window = max(quantile.DefaultWindow, int(math.Ceil(8/a.rate)))
	}
	est, err := quantile.New(quantile.Config{Window: window, Quantiles: []float64{1 - a.rate}})
	if err != nil {
		return nil, fmt.Errorf("%w: Window: %w", ErrInvalidConfig, err)
	}
	a.est = est
	a.minSamples = min(int(math.Ceil(4/a.rate)), 2*est.Window())
	return a, nil
}

// AttemptTimeout returns the timeout for the next attempt: Initial while
// there are fewer than 4/FalseTimeoutRate latencies, then Margin times
// their 1-FalseTimeoutRate quantile, within [Floor, Ceiling]. It is two
// atomic loads and a multiplication.
func (a *Adaptive) AttemptTimeout() time.Duration {
	q, n := a.est.Tracked(0)
	if n < a.minSamples {
		return a.initial
	}
	t := a.ceiling
	if f := float64(q) * a.margin; f < float64(a.ceiling) {
		t = time.Duration(f)
	}
	return max(t, a.floor)
}

// Observe records an attempt's latency. Only successful attempts count:
// a fast failure (a refused connection) says nothing about how long an
// answer takes, and an attempt that timed out only says that the answer
// would have taken longer than the timeout, so counting it would stretch
// the timeout toward the ceiling whenever the dependency hangs.
func (a *Adaptive) Observe(latency time.Duration, ok bool) {
	if ok {
		a.est.Record(latency)
	}
}

// Quantile returns the current estimate of the tracked latency quantile
// (before the margin and bounds) and the number of latencies it rests on,
// as of the estimator's last refresh.
func (a *Adaptive) Quantile() (time.Duration, int) { return a.est.Tracked(0) }
