package hedge

import (
	"errors"
	"fmt"
	"time"

	"github.com/unherd/unherd/observe"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/internal/quantile"
)

// Defaults applied to zero fields of [Config].
const (
	// DefaultQuantile is the latency quantile the adaptive delay tracks:
	// Dean and Barroso hedge after the 95th-percentile expected latency,
	// which limits the extra load to about 5%.
	DefaultQuantile = 0.95
	// DefaultMaxHedges is the number of hedges a call may start after its
	// primary.
	DefaultMaxHedges = 1
	// DefaultBudgetRatio is the share of requests the default budget lets
	// hedge: twice the p95 rule's own share, so that a burst of slow
	// calls (a stalled replica) still finds budget left.
	DefaultBudgetRatio = 0.1
	// DefaultMinWinShare is the share of hedges that must win for hedging
	// to stay on: below it, hedging is suspended except for probes.
	DefaultMinWinShare = 0.05
	// DefaultProbeEvery is how many requests share one probe when
	// hedging has just been suspended: one request in DefaultProbeEvery
	// may hedge, one in up to 8*DefaultProbeEvery as probes keep losing.
	DefaultProbeEvery = 16
	// DefaultWindow is the number of latencies per half-window of the
	// adaptive delay's estimator (it keeps the last 4,096 to 8,192).
	DefaultWindow = quantile.DefaultWindow
	// MaxHedgesLimit is the largest MaxHedges accepted: five attempts in
	// all, the limit gRPC applies to maxAttempts (proposal A6).
	MaxHedgesLimit = 4
)

// maxProbeGap bounds how far lost probes stretch the gap between probes
// while hedging is suspended: at most one request in maxProbeGap *
// ProbeEvery (128 by default) may hedge.
const maxProbeGap = 8

// winShareWeight is the weight of each hedged request's outcome in the
// exponentially decaying win share: 1/32, so the share reflects roughly
// the last 32 hedged requests. With the p95 rule a healthy tail gives a
// share near 0.2 (the slow fifth of the hedged requests), whose
// fluctuation at this weight is about 0.05; the default threshold of 0.05
// is three of those below it.
const winShareWeight = 1.0 / 32

// ErrInvalidConfig is wrapped by every error Validate and New return.
var ErrInvalidConfig = errors.New("hedge: invalid config")

// ErrLost is the context cause of an attempt cancelled because another
// attempt settled the call first (it succeeded, or failed with a fatal
// error). context.Cause(ctx) inside the attempt returns it.
var ErrLost = errors.New("hedge: another attempt settled the call")

// Config configures a [Hedger]. The zero value hedges once, after the
// 95th percentile of recent latencies (the largest latency seen, while
// fewer than 200 are known), within a budget of 10% of requests, and
// suspends hedging when fewer than 5% of hedges win.
type Config struct {
	// Delay, if positive, is a fixed hedge delay: a hedge starts when an
	// attempt has had no answer for Delay. Zero means the adaptive delay:
	// the Quantile of recent latencies, bounded by MinDelay and MaxDelay.
	Delay time.Duration

	// NoDelay starts every hedge at once, with the primary, instead of
	// one delay apart: gRPC's hedgingDelay of "0s" (proposal A6). It
	// needs Delay zero, which otherwise means the adaptive delay.
	NoDelay bool

	// Quantile is the latency quantile the adaptive delay tracks, in
	// (0, 1). Zero means DefaultQuantile (0.95).
	Quantile float64

	// MinDelay is the adaptive delay's floor. Zero means none.
	MinDelay time.Duration

	// MaxDelay is the adaptive delay's ceiling. While the estimator has
	// too few latencies (10/(1-Quantile): 200 for p95) the delay is the
	// largest latency observed so far, bounded by MinDelay and MaxDelay,
	// and MaxDelay before the first latency. Zero means no ceiling, and no
	// hedging before the first latency is known.
	MaxDelay time.Duration

	// Window is the number of latencies per half-window of the adaptive
	// delay's estimator; it keeps the last Window to 2*Window, so the
	// delay follows a change within two windows. Zero means
	// DefaultWindow (4096).
	Window int

	// MaxHedges is the number of hedges a call may start after its
	// primary, one delay apart. Zero means DefaultMaxHedges (1); at most
	// MaxHedgesLimit (4).
	MaxHedges int

	// Budget pays for the hedges of Do and DoFirstSuccess and hears of
	// their requests (see Policy): each hedge withdraws
	// failure.Transient before it starts, and every request is recorded
	// when it ends, a hedge as a retry withdrawn as failure.Transient
	// and any other as a call's first attempt, so a budget that counts
	// requests counts each call once (engine.AdmitRequest). Nil means
	// budget.NewRatio(budget.RatioConfig{Ratio: DefaultBudgetRatio,
	// NoFloor: true}): hedges at most 10% of the requests of the last
	// 10 s, with no floor, so an idle client cannot hedge.
	// budget.Unlimited turns the budget off. DoAttempt does not use it:
	// its hedges are paid for by the retry policy whose attempt they copy,
	// and recorded with it.
	Budget budget.Budget

	// NonFatal, if set, reports whether an attempt's error leaves the
	// call open: the next hedge starts at once instead of after the delay
	// (gRPC's nonFatalStatusCodes, proposal A6), and the call fails only
	// when no attempt is left. Any other error settles the call at once
	// and cancels the other attempts, in Do and DoFirstSuccess alike.
	// Nil means every error is fatal to Do; DoFirstSuccess then waits
	// for the other attempts instead (see DoFirstSuccess).
	NonFatal func(error) bool

	// MinWinShare is the share of hedges that must win (answer before the
	// attempts started before them) for hedging to stay on. Below it,
	// hedging is suspended except for one request in ProbeEvery, and
	// resumes when those probes win often enough to lift the share back.
	// Zero means DefaultMinWinShare (0.05); it must be in [0, 1). A
	// negative value turns the rule off.
	MinWinShare float64

	// ProbeEvery is how many requests share one probe when hedging has
	// just been suspended; each probe that loses doubles that gap, up to
	// 8*ProbeEvery, and a probe that wins resets it. Zero means
	// DefaultProbeEvery (16).
	ProbeEvery int

	// Observer, if set, receives an observe.Event when a call starts a
	// hedge (HedgeStarted), when a budget refuses one or a guard rejects
	// it (HedgeDenied) and when a call that started hedges settles
	// (HedgeWon, HedgeLost), with the call's context, outside any lock.
	// Nil means none, at no cost.
	Observer observe.Observer
}

// DefaultBudget returns the configuration of the budget New builds when
// Budget is nil: a budget.Ratio with Ratio DefaultBudgetRatio and no
// floor, on the real clock. A simulator that wants the default on its
// own clock sets Now and passes budget.NewRatio's result as Budget.
func (c *Config) DefaultBudget() budget.RatioConfig {
	return budget.RatioConfig{Ratio: DefaultBudgetRatio, NoFloor: true}
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	switch {
	case c.Delay < 0:
		return fmt.Errorf("%w: Delay %v is negative; use 0 for the adaptive delay", ErrInvalidConfig, c.Delay)
	case c.NoDelay && c.Delay != 0:
		return fmt.Errorf("%w: NoDelay with Delay %v: a hedge cannot start both at once and after a delay", ErrInvalidConfig, c.Delay)
	case c.Quantile != 0 && !(c.Quantile > 0 && c.Quantile < 1): // also rejects NaN
		return fmt.Errorf("%w: Quantile %v is outside (0, 1)", ErrInvalidConfig, c.Quantile)
	case c.MinDelay < 0:
		return fmt.Errorf("%w: MinDelay %v is negative", ErrInvalidConfig, c.MinDelay)
	case c.MaxDelay < 0:
		return fmt.Errorf("%w: MaxDelay %v is negative; use 0 for no ceiling", ErrInvalidConfig, c.MaxDelay)
	case c.MaxDelay > 0 && c.MinDelay > c.MaxDelay:
		return fmt.Errorf("%w: MinDelay %v is above MaxDelay %v", ErrInvalidConfig, c.MinDelay, c.MaxDelay)
	case c.Window < 0:
		return fmt.Errorf("%w: Window %d is negative; use 0 for the default of %d", ErrInvalidConfig, c.Window, DefaultWindow)
	case c.MaxHedges < 0 || c.MaxHedges > MaxHedgesLimit:
		return fmt.Errorf("%w: MaxHedges %d is outside [0, %d]", ErrInvalidConfig, c.MaxHedges, MaxHedgesLimit)
	case c.MinWinShare >= 1 || c.MinWinShare != c.MinWinShare:
		return fmt.Errorf("%w: MinWinShare %v is not below 1", ErrInvalidConfig, c.MinWinShare)
	case c.ProbeEvery < 0:
		return fmt.Errorf("%w: ProbeEvery %d is negative; use 0 for the default of %d", ErrInvalidConfig, c.ProbeEvery, DefaultProbeEvery)
	}
	return nil
}
