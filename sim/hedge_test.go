package sim

import (
	"testing"
	"time"
)

// TestHedgerBudgetOnVirtualClock: the hedgers of a hedge run must keep
// their budget on the run's virtual clock. A budget on the real clock
// would see the whole of a short run as one instant of its 10 s window,
// and a long one as several, so the result would depend on how fast the
// machine ran it.
func TestHedgerBudgetOnVirtualClock(t *testing.T) {
	p := defaultHedgeParams()
	for _, tc := range []struct {
		name     string
		strategy int
	}{
		{"default hedger", hedgeDefault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now time.Duration
			h, err := newHedger(tc.strategy, p, func() time.Time { return Epoch.Add(now) })
			if err != nil {
				t.Fatal(err)
			}
			for range 100 {
				h.Begin()
				h.End(nil)
			}
			if !h.Admit() {
				t.Fatal("no hedge allowed after 100 requests")
			}
			now = time.Minute // the requests have left the 10 s window
			if h.Admit() {
				t.Fatal("a virtual minute later the budget still counts the requests: it is not on the run's clock")
			}
		})
	}
	t.Run("no hedger for no hedge and tied", func(t *testing.T) {
		for _, s := range []int{hedgeNone, hedgeTied} {
			if h, err := newHedger(s, p, nil); h != nil || err != nil {
				t.Errorf("strategy %d: %v, %v; want no hedger", s, h, err)
			}
		}
	})
}
