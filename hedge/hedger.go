package hedge

import (
	"cmp"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/internal/quantile"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
)

// Hedger holds a hedging policy and its run-time state: the latency
// estimator behind the adaptive delay and the win share. It is safe for
// concurrent use; build one per dependency (per replica set) and share
// it. The zero Hedger is not usable; call New.
//
// The decision methods Begin, Delay, Observe and Result are the whole of
// the hedging logic; the books are the engine's: every request, the
// primary and each hedge, is admitted and recorded as an
// engine.Request, with Policy for [Do] and [DoFirstSuccess] and with the
// retry call's own policy for [DoAttempt]. A simulator running under its
// own clock calls them directly, in this order, for each request:
//
//  1. Begin at the start: it says whether the request may hedge and
//     after what delay. Admit the primary (engine.AdmitRequest with isCopy
//     false) unless a retry call's attempt is the primary.
//  2. When the delay passes with no answer (or an attempt fails with a
//     non-fatal error), admit each hedge (engine.AdmitRequest with isCopy
//     true) and start it only if that succeeds (the budget has paid for
//     it); Cancel the request if it does not start after all.
//  3. Observe with the request's latency when it succeeds (from its start
//     to the first successful answer).
//  4. Result once, when a request that started at least one hedge
//     succeeds: whether a hedge won.
//  5. End each admitted request once its outcome is known, or Abandon it
//     if it lost the race or its caller gave up.
type Hedger struct {
	// Read by every request: one cache line (the struct is 256 bytes, a
	// size class whose objects start on a line).
	est         *quantile.Estimator // nil for a fixed delay
	fixed       time.Duration
	minDelay    time.Duration
	ceiling     time.Duration // maxDelay, or the largest Duration if none
	minWinShare float64
	probeEvery  uint64
	_           [16]byte

	// Written while hedging: a line of their own, so that writes to
	// them do not evict the fields above from other cores, nor collide
	// with a neighbouring object.
	winShare atomic.Uint64 // float64 bits, exponentially decaying
	probes   atomic.Uint64 // requests seen while suspended
	probeGap atomic.Uint64 // requests per probe now: probeEvery, doubled per lost probe
	coldMax  atomic.Int64  // largest latency observed while the estimator is cold
	warm     atomic.Bool   // the estimator has minSamples latencies
	_        [28]byte

	maxDelay   time.Duration
	minSamples int
	maxHedges  int
	policy     *retry.Policy // Do's: Config.Budget, one attempt
	nonFatal   func(error) bool
	observer   observe.Observer

	calls sync.Pool // *call[T] of the last T used, with their timers
	_     [32]byte  // to 256 bytes (TestHedgerLayout)
}

// New validates cfg and returns a Hedger built from it.
func New(cfg Config) (*Hedger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Hedger{
		fixed:       cfg.Delay,
		minDelay:    cfg.MinDelay,
		maxDelay:    cfg.MaxDelay,
		maxHedges:   cmp.Or(cfg.MaxHedges, DefaultMaxHedges),
		nonFatal:    cfg.NonFatal,
		minWinShare: cmp.Or(cfg.MinWinShare, DefaultMinWinShare),
		probeEvery:  uint64(cmp.Or(cfg.ProbeEvery, DefaultProbeEvery)),
		observer:    cfg.Observer,
	}
	b := cfg.Budget
	if b == nil {
		r, err := budget.NewRatio(cfg.DefaultBudget())
		if err != nil {
			return nil, fmt.Errorf("%w: default budget: %w", ErrInvalidConfig, err)
		}
		b = r
	}
	p, err := retry.New(retry.Config{MaxAttempts: 1, Budget: b})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	h.policy = p
	h.ceiling = time.Duration(math.MaxInt64)
	if h.maxDelay > 0 {
		h.ceiling = h.maxDelay
	}
	if h.fixed == 0 && !cfg.NoDelay {
		q := cmp.Or(cfg.Quantile, DefaultQuantile)
		est, err := quantile.New(quantile.Config{Window: cfg.Window, Quantiles: []float64{q}})
		if err != nil {
			return nil, fmt.Errorf("%w: Window: %w", ErrInvalidConfig, err)
		}
		h.est = est
		// Ten latencies beyond the quantile before trusting it, and no
		// more than the estimator keeps.
		h.minSamples = min(int(math.Ceil(10/(1-q))), 2*est.Window())
	}
	h.winShare.Store(math.Float64bits(1)) // hedging starts on
	h.probeGap.Store(h.probeEvery)
	return h, nil
}

// MaxHedges returns the number of hedges a call may start after its
// primary.
func (h *Hedger) MaxHedges() int { return h.maxHedges }

// Delay returns the current hedge delay: the fixed Config.Delay, or the
// tracked latency quantile bounded by MinDelay and MaxDelay. While the
// estimator has too few latencies it returns MaxDelay, or false if there
// is no MaxDelay: do not hedge yet. It is a few atomic loads.
func (h *Hedger) Delay() (time.Duration, bool) {
	if d, ok := h.warmDelay(); ok {
		return d, true
	}
	return h.coldDelay()
}

// warmDelay is Delay in the common case, an adaptive delay with a warm
// estimator (ok false otherwise). It inlines into Delay and Begin.
func (h *Hedger) warmDelay() (d time.Duration, ok bool) {
	if h.est == nil || !h.warm.Load() {
		return 0, false
	}
	d, _ = h.est.Tracked(0)
	return min(max(d, h.minDelay), h.ceiling), true
}

// coldDelay is Delay for a fixed delay, or while the estimator is cold.
func (h *Hedger) coldDelay() (time.Duration, bool) {
	if h.est == nil {
		return h.fixed, true
	}
	d, n := h.est.Tracked(0)
	if n < h.minSamples && !h.warm.Load() {
		// Cold: the largest latency so far, which a hedge after it
		// would have cut, bounded by MaxDelay; none at all yet: MaxDelay.
		d = time.Duration(h.coldMax.Load())
		if d == 0 {
			return h.maxDelay, h.maxDelay > 0
		}
	} else {
		h.warm.Store(true)
	}
	return min(max(d, h.minDelay), h.ceiling), true
}

// Begin starts a request: it returns the hedge delay and whether this
// request may hedge at all. It may not while the delay is unknown (see
// Delay), or while hedging is suspended, except for one request in
// ProbeEvery. Begin tells the budget nothing: requests are admitted and
// recorded by the engine (engine.AdmitRequest).
func (h *Hedger) Begin() (time.Duration, bool) {
	d, ok := h.warmDelay()
	if !ok {
		if d, ok = h.coldDelay(); !ok {
			return 0, false
		}
	}
	if h.Suspended() && (h.probes.Add(1)-1)%h.probeGap.Load() != 0 {
		return 0, false
	}
	return d, true
}

// Observe records the latency of a request that succeeded, from its start
// to its first successful answer, for the adaptive delay. Failed requests
// are not observed: a fast failure says nothing about how long an answer
// takes. With a fixed delay Observe does nothing.
func (h *Hedger) Observe(latency time.Duration) {
	if h.est == nil {
		return
	}
	h.est.Record(latency)
	if !h.warm.Load() {
		h.observeCold(latency)
	}
}

// observeCold keeps the largest latency observed while the estimator is
// cold, which Delay returns until it is warm.
func (h *Hedger) observeCold(latency time.Duration) {
	for {
		old := h.coldMax.Load()
		if int64(latency) <= old || h.coldMax.CompareAndSwap(old, int64(latency)) {
			return
		}
	}
}

// Result records the outcome of a request that started at least one
// hedge and succeeded: hedgeWon is true when the answer came from a hedge
// rather than the primary. The win share decays by 1/32 per call toward 1
// (won) or 0 (lost); hedging is suspended while it is below MinWinShare.
func (h *Hedger) Result(hedgeWon bool) {
	x := 0.0
	if hedgeWon {
		x = 1
	}
	var s float64
	for {
		old := h.winShare.Load()
		s = math.Float64frombits(old) + winShareWeight*(x-math.Float64frombits(old))
		if h.winShare.CompareAndSwap(old, math.Float64bits(s)) {
			break
		}
	}
	// While suspended, each lost probe doubles the gap between probes,
	// up to maxProbeGap times ProbeEvery; a win, or hedging back on,
	// resets it.
	gap := h.probeGap.Load()
	switch {
	case hedgeWon || s >= h.minWinShare:
		if gap != h.probeEvery {
			h.probeGap.Store(h.probeEvery)
		}
	case gap < maxProbeGap*h.probeEvery:
		h.probeGap.CompareAndSwap(gap, 2*gap)
	}
}

// Policy returns the retry policy that Do and DoFirstSuccess admit and
// record their requests with: one attempt, Config.Budget (or the default
// budget) and no guards. A request that is not a hedge is recorded as a
// call's first attempt; a hedge is paid for by the budget before it
// starts and recorded as a copy (see engine.AdmitRequest). A simulator
// driving the decision methods admits and ends its requests with it.
func (h *Hedger) Policy() *retry.Policy { return h.policy }

// WinShare returns the exponentially decaying share of hedged requests
// that a hedge won. It starts at 1.
func (h *Hedger) WinShare() float64 { return math.Float64frombits(h.winShare.Load()) }

// Suspended reports whether hedging is suspended because hedges stopped
// winning (WinShare below MinWinShare).
func (h *Hedger) Suspended() bool { return h.WinShare() < h.minWinShare }

// isNonFatal reports whether err leaves the call open.
func (h *Hedger) isNonFatal(err error) bool { return h.nonFatal != nil && h.nonFatal(err) }
