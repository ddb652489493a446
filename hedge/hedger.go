package hedge

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/quantile"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// Hedger holds a hedging policy and its run-time state: the latency
// estimator behind the adaptive delay, the budget and the win share. It is
// safe for concurrent use; build one per dependency (per replica set) and
// share it. The zero Hedger is not usable; call New.
//
// The decision methods Begin, Delay, Admit, Refund, Observe, Result and
// End are the whole of the hedging logic. [Do] calls them around real
// attempts; a simulator running under its own clock calls them directly,
// in this order, for each request:
//
//  1. Begin at the start: it says whether the request may hedge and
//     after what delay.
//  2. When the delay passes with no answer (or an attempt fails with a
//     non-fatal error), Admit before each hedge; start it only if Admit
//     says so (it has withdrawn the hedge's cost from the budget), and
//     Refund if an admitted hedge does not start after all.
//  3. Observe with the request's latency when it succeeds (from its start
//     to the first successful answer).
//  4. Result once, when a request that started at least one hedge
//     succeeds: whether a hedge won.
//  5. End once, when the request's outcome is known (success or the
//     error that settled it): the budget hears of the request then, with
//     its real outcome, and only then.
type Hedger struct {
	// Read by every request: one cache line (the struct is 256 bytes, a
	// size class whose objects start on a line).
	est         *quantile.Estimator // nil for a fixed delay
	fixed       time.Duration
	minDelay    time.Duration
	ceiling     time.Duration // maxDelay, or the largest Duration if none
	minWinShare float64
	probeEvery  uint64
	record      bool // End records requests with the budget (not SharedWithRetry)
	_           [15]byte

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
	budget     budget.Budget
	nonFatal   func(error) bool
	observer   observe.Observer

	calls sync.Pool // *call[T] of the last T used, with their timers
	_     [24]byte  // to 256 bytes (TestHedgerLayout)
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
		budget:      cfg.Budget,
		record:      !cfg.SharedWithRetry,
		nonFatal:    cfg.NonFatal,
		minWinShare: cmp.Or(cfg.MinWinShare, DefaultMinWinShare),
		probeEvery:  uint64(cmp.Or(cfg.ProbeEvery, DefaultProbeEvery)),
		observer:    cfg.Observer,
	}
	if h.budget == nil {
		b, err := budget.NewRatio(cfg.DefaultBudget())
		if err != nil {
			return nil, fmt.Errorf("%w: default budget: %w", ErrInvalidConfig, err)
		}
		h.budget = b
	}
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
// ProbeEvery. Begin tells the budget nothing: the request is recorded by
// End, once its outcome is known.
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

// Admit asks the budget to pay for one hedge (it withdraws
// failure.Transient) and reports whether the hedge may start. Call it only
// for a hedge about to start: a true answer has been paid for.
func (h *Hedger) Admit() bool {
	return h.budget.Withdraw(failure.Transient)
}

// Refund gives back what Admit took for a hedge that will not start after
// all (Do calls it when the call settled while the hedge was being
// admitted). It does so only if the budget implements budget.Refunder;
// otherwise the hedge stays counted, which errs on the side of fewer
// hedges.
func (h *Hedger) Refund() {
	if r, ok := h.budget.(budget.Refunder); ok {
		r.Refund(failure.Transient)
	}
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

// End records, once per request, how it ended: err is nil for a success,
// or the error that settled it. The budget hears of the request here, as
// a call's first attempt with its real outcome (budget.Attempt{N: 1,
// Failed: err != nil, Class: engine.DefaultClassify(err)}; an
// integration that knows better judges its errors with retry.Judge), so a
// failing dependency earns no budget: a TokenBucket refills and a GRPC budget
// recovers only from successes, and a Ratio counts the request whatever
// its outcome. A local rejection (an error matching retry.ErrRejected, say
// from a circuit breaker inside the request) is not recorded, as the
// retry loop does not record it: it says nothing about the dependency.
// Neither, in Do, is a failure after the caller gave up, unless what
// ended the request's context was a retry attempt timeout
// (retry.ErrAttemptTimeout), which Do records as a Timeout. With
// Config.SharedWithRetry, End records nothing: the retry policy records
// the attempt that made the request.
func (h *Hedger) End(err error) {
	if !h.record {
		return
	}
	if err == nil {
		h.budget.Record(budget.Attempt{N: 1})
		return
	}
	if errors.Is(err, retry.ErrRejected) {
		return
	}
	h.budget.Record(budget.Attempt{N: 1, Failed: true, Class: engine.DefaultClassify(err)})
}

// WinShare returns the exponentially decaying share of hedged requests
// that a hedge won. It starts at 1.
func (h *Hedger) WinShare() float64 { return math.Float64frombits(h.winShare.Load()) }

// Suspended reports whether hedging is suspended because hedges stopped
// winning (WinShare below MinWinShare).
func (h *Hedger) Suspended() bool { return h.WinShare() < h.minWinShare }

// isNonFatal reports whether err leaves the call open.
func (h *Hedger) isNonFatal(err error) bool { return h.nonFatal != nil && h.nonFatal(err) }
