package timeout

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/internal/quantile"
	"github.com/unherd/unherd/internal/validate"
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
	// DefaultWidenAfter is how many attempts in a row must time out
	// before the timeout doubles: by chance, at the default false-timeout
	// rate of 0.1%, three in a row happen once in a billion attempts.
	DefaultWidenAfter = 3
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

	// WidenAfter is how many attempts in a row, with no success between
	// them, must time out before the timeout doubles (up to Ceiling), so
	// that a dependency that became slower than the whole timeout gets a
	// chance to answer, and its answers reach the estimator. Successes
	// shrink the widened timeout back toward what the estimator says.
	// Zero means DefaultWidenAfter (3).
	WidenAfter int
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	switch {
	case c.FalseTimeoutRate != 0 && !(c.FalseTimeoutRate > 0 && c.FalseTimeoutRate <= 0.5):
		return fmt.Errorf("%w: FalseTimeoutRate %v is outside (0, 0.5]", ErrInvalidConfig, c.FalseTimeoutRate)
	case c.Margin != 0 && !(c.Margin >= 1 && c.Margin <= 1e6):
		return fmt.Errorf("%w: Margin %v is outside [1, 1e6]", ErrInvalidConfig, c.Margin)
	}
	if err := validate.NonNegative(ErrInvalidConfig,
		validate.Field{Name: "Floor", Value: c.Floor},
		validate.Field{Name: "Ceiling", Value: c.Ceiling},
		validate.Field{Name: "Initial", Value: c.Initial},
		validate.Field{Name: "Window", Value: c.Window},
		validate.Field{Name: "WidenAfter", Value: c.WidenAfter, Hint: fmt.Sprintf("; use 0 for the default of %d", DefaultWidenAfter)},
	); err != nil {
		return err
	}
	floor, ceiling := cmp.Or(c.Floor, DefaultFloor), cmp.Or(c.Ceiling, DefaultCeiling)
	if floor > ceiling {
		return fmt.Errorf("%w: Floor %v is above Ceiling %v", ErrInvalidConfig, floor, ceiling)
	}
	return nil
}

// Source supplies per-attempt timeouts that change at run time. A
// retry.Config takes one in Timeouts; the retry loop calls AttemptTimeout
// before each attempt (a value <= 0 means none) and Observe after it,
// with its latency and whether it succeeded. Implementations must be
// safe for concurrent use.
type Source interface {
	AttemptTimeout() time.Duration
	Observe(latency time.Duration, ok bool)
}

// Adaptive is a per-attempt timeout that tracks latency: Margin times the
// 1-FalseTimeoutRate quantile of recent successful attempts, within
// [Floor, Ceiling], widened (doubled, up to Ceiling) after WidenAfter
// attempts in a row time out, and narrowed back by the successes that
// follow. It is a Source, so
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
	widenAfter int32
	est        *quantile.Estimator

	// widened is the widened timeout in nanoseconds, 0 for none; streak
	// counts the attempts that timed out since the last success.
	widened atomic.Int64
	streak  atomic.Int32
}

var _ Source = (*Adaptive)(nil)

// New validates cfg and returns an Adaptive timeout with no latencies yet.
func New(cfg Config) (*Adaptive, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Adaptive{
		rate:       cmp.Or(cfg.FalseTimeoutRate, DefaultFalseTimeoutRate),
		margin:     cmp.Or(cfg.Margin, DefaultMargin),
		floor:      cmp.Or(cfg.Floor, DefaultFloor),
		ceiling:    cmp.Or(cfg.Ceiling, DefaultCeiling),
		widenAfter: int32(min(cmp.Or(cfg.WidenAfter, DefaultWidenAfter), math.MaxInt32)),
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
// their 1-FalseTimeoutRate quantile, within [Floor, Ceiling]; or the
// widened timeout, if attempts timed out in a row and it is longer. It is
// three atomic loads and a multiplication.
func (a *Adaptive) AttemptTimeout() time.Duration {
	return max(a.estimated(), time.Duration(a.widened.Load()))
}

// estimated is the timeout the estimator gives, before any widening.
func (a *Adaptive) estimated() time.Duration {
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

// Observe records an attempt's latency. Only successful attempts reach the
// estimator: a fast failure (a refused connection) says nothing about how
// long an answer takes, and an attempt that timed out only says that the
// answer would have taken longer than the timeout, so counting it as a
// latency would stretch the timeout toward the ceiling whenever the
// dependency hangs.
//
// A failure whose latency reaches the timeout in force is a timeout.
// WidenAfter of them in a row double the timeout, up to Ceiling, so that a
// dependency now slower than the whole timeout can answer, and its
// answers reach the estimator. An attempt started under a shorter timeout
// than the one now in force does not count toward the next doubling. Each
// success then narrows a widened timeout by 1/16 of its excess over
// Margin times that success's latency, so once the estimator has caught up
// the widening fades.
func (a *Adaptive) Observe(latency time.Duration, ok bool) {
	if ok {
		a.streak.Store(0)
		a.est.Record(latency)
		a.narrow(latency)
		return
	}
	// Timers fire a little late, never early: a timed-out attempt's latency
	// is at least the timeout it ran under.
	cur := a.AttemptTimeout()
	if latency < cur || cur >= a.ceiling {
		return
	}
	if a.streak.Add(1) < a.widenAfter {
		return
	}
	a.streak.Store(0)
	wider := min(2*cur, a.ceiling)
	for {
		w := a.widened.Load()
		if time.Duration(w) >= wider || a.widened.CompareAndSwap(w, int64(wider)) {
			return
		}
	}
}

// narrow shrinks a widened timeout after a success of the given latency.
func (a *Adaptive) narrow(latency time.Duration) {
	for {
		w := a.widened.Load()
		if w == 0 {
			return
		}
		need := max(int64(float64(latency)*a.margin), int64(a.estimated()))
		next := w - (w-need)/16
		if need >= w {
			next = w // this success needed all of it
		}
		if est := int64(a.estimated()); next <= est+est/64 {
			next = 0 // the estimator has caught up
		}
		if next == w || a.widened.CompareAndSwap(w, next) {
			return
		}
	}
}

// Quantile returns the current estimate of the tracked latency quantile
// (before the margin and bounds) and the number of latencies it rests on,
// as of the estimator's last refresh.
func (a *Adaptive) Quantile() (time.Duration, int) { return a.est.Tracked(0) }
