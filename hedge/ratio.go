package hedge

import (
	"sync/atomic"

	"github.com/unherd/unherd/budget"
)

// ratioUnit is the cost of one hedge in credit units; a request earns
// ratio*ratioUnit of them.
const ratioUnit = 1 << 20

// ratioBurst is how many hedges of unspent credit the default budget
// keeps: enough to absorb a short run of slow requests, too few to let an
// idle period turn into a hedge storm.
const ratioBurst = 10

// ratio is the default hedge budget: every request earns a fixed share of
// a hedge (DefaultBudgetRatio: 5%), every hedge spends a whole one, and
// unspent credit is capped at ratioBurst hedges. Over any long run, hedges
// stay within the share of requests plus the burst. It starts full.
type ratio struct {
	credit atomic.Int64
	earn   int64
}

func newRatio(share float64) *ratio {
	r := &ratio{earn: int64(share * ratioUnit)}
	r.credit.Store(ratioBurst * ratioUnit)
	return r
}

// Record credits the budget for a request (an attempt with N == 1).
func (r *ratio) Record(a budget.Attempt) {
	if a.N != 1 {
		return
	}
	for {
		c := r.credit.Load()
		if c >= ratioBurst*ratioUnit {
			return // full: a load, no write, on the common path
		}
		if r.credit.CompareAndSwap(c, min(c+r.earn, ratioBurst*ratioUnit)) {
			return
		}
	}
}

// Withdraw spends one hedge's credit if there is that much.
func (r *ratio) Withdraw(budget.Class) bool {
	for {
		c := r.credit.Load()
		if c < ratioUnit {
			return false
		}
		if r.credit.CompareAndSwap(c, c-ratioUnit) {
			return true
		}
	}
}
