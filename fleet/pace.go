package fleet

import (
	"math"
	"sync/atomic"
)

// pacer spreads a process's retries evenly over time, in every state:
// each request the process records earns Ratio retry credits, and the
// process's share of the fleet's floor earns credits at a steady rate.
// A retry takes one credit. Credits saved are capped at what the process
// earns in a hundredth of the window (at least one request's worth), so
// a process that saved while its calls succeeded cannot spend a burst
// when they start failing, and the fleet's retries in any second stay
// near Ratio times that second's requests plus the floor, whatever the
// ledger's window allows.
//
// A process whose cap is below one credit (a process that earns less
// than one retry per hundredth of the window) admits a retry with a
// probability equal to its credit, and then forfeits that credit
// whatever the draw: its expected retries are its credits, and a fleet
// of many such processes does not admit one retry each at the instant
// an outage begins.
//
// The allowance is a0 + ratio*(requests-r0) + floor*(t-t0); spent counts
// the credits taken. Both are float64s, spent stored as bits in an
// atomic word, so that Withdraw takes no lock: one compare-and-swap.
type pacer struct {
	spent  atomic.Uint64 // float64 bits
	params atomic.Pointer[paceParams]
}

// paceParams are a pacer's rates from one sync on; a sync replaces them.
type paceParams struct {
	t0    int64   // unix ns at which they took effect
	a0    float64 // the allowance at t0
	r0    int64   // the requests counted at t0
	ratio float64 // credits per request
	floor float64 // credits per second
	cap   float64 // most credits saved
}

// allowance is the credits earned up to t (unix ns) with r requests.
func (p *paceParams) allowance(t, r int64) float64 {
	return p.a0 + p.ratio*float64(r-p.r0) + p.floor*float64(max(t-p.t0, 0))/1e9
}

// take reports whether a retry may go ahead at t with r requests counted,
// and returns what it took, for undo. draw returns a uniform number in
// [0, 1).
func (pc *pacer) take(t, r int64, draw func() float64) (ok bool, took float64) {
	p := pc.params.Load()
	a := p.allowance(t, r)
	for {
		old := pc.spent.Load()
		s := math.Float64frombits(old)
		credit := min(a-s, p.cap)
		var next float64
		switch {
		case credit >= 1:
			ok, next = true, a-credit+1
		case p.cap < 1 && credit > 0:
			// A fraction of a retry: a draw decides, and the credit is
			// spent either way.
			ok, next = draw() < credit, a
		default:
			return false, 0
		}
		if pc.spent.CompareAndSwap(old, math.Float64bits(next)) {
			return ok, next - s
		}
	}
}

// undo gives back what take took, for a retry that take allowed but the
// lease or the fallback refused, or that was refunded.
func (pc *pacer) undo(took float64) {
	for {
		old := pc.spent.Load()
		if pc.spent.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)-took)) {
			return
		}
	}
}

// set makes the rates ratio and floor (credits per second) and the cap
// take effect at t, with r requests counted, keeping the allowance
// earned so far.
func (pc *pacer) set(t, r int64, ratio, floor, cap float64) {
	a := 0.0
	if p := pc.params.Load(); p != nil {
		a = p.allowance(t, r)
	}
	pc.params.Store(&paceParams{t0: t, a0: a, r0: r, ratio: ratio, floor: floor, cap: cap})
}
