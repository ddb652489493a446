package sim

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	retryengine "github.com/unherd/unherd/retry/engine"
	"github.com/unherd/unherd/sim/internal/engine"
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
			h, err := newHedger(tc.strategy, p, func() time.Time { return epoch.Add(now) })
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			admit := func(hedge bool) bool {
				req, err := retryengine.AdmitRequest(ctx, h.Policy(), hedge)
				req.End(nil)
				return err == nil
			}
			for range 100 {
				h.Begin()
				admit(false)
			}
			if !admit(true) {
				t.Fatal("no hedge allowed after 100 requests")
			}
			now = time.Minute // the requests have left the 10 s window
			if admit(true) {
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

// The hedge claims are computed from the measurements: the default
// hedger's claim holds for a 10x cut within 6% extra requests and not
// otherwise, and the saturated claim needs suspension and no percentile
// worse than without hedging.
func TestHedgeClaimsFollowMeasurements(t *testing.T) {
	p := defaultHedgeParams()
	ms := time.Millisecond
	outcomes := func(defP999 time.Duration, defSent float64, satSuspended bool, satP99 time.Duration) []hedgeOutcome {
		var outs []hedgeOutcome
		for f := range hedgeFleets {
			for s := range hedgeStrategies {
				o := hedgeOutcome{P50: 10 * ms, P99: 100 * ms, P999: 1000 * ms}
				switch {
				case s == hedgeDefault && f == 0:
					o.P999, o.ExtraSent = defP999, defSent
				case s == hedgeDefault && f == 2:
					o.Suspended, o.P99 = satSuspended, satP99
				}
				outs = append(outs, o)
			}
		}
		return outs
	}
	tests := []struct {
		name          string
		outs          []hedgeOutcome
		defHolds      bool
		saturatedHold bool
	}{
		{"cuts 20x for 5%, suspends", outcomes(50*ms, 0.05, true, 100*ms), true, true},
		{"cuts 5x", outcomes(200*ms, 0.05, true, 100*ms), false, true},
		{"costs 7%", outcomes(50*ms, 0.07, true, 100*ms), false, true},
		{"never suspends", outcomes(50*ms, 0.05, false, 100*ms), true, false},
		{"suspends but p99 worse", outcomes(50*ms, 0.05, true, 110*ms), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := hedgeClaims(p, tt.outs)
			if c[1].Holds != tt.defHolds || c[4].Holds != tt.saturatedHold {
				t.Errorf("default claim holds %v (want %v), saturated claim holds %v (want %v): %s; %s",
					c[1].Holds, tt.defHolds, c[4].Holds, tt.saturatedHold, c[1].Measured, c[4].Measured)
			}
		})
	}
}

// TestRunHedge: one outcome per fleet and strategy, in order, the same
// for the same seed, with sorted latencies for pooling.
func TestRunHedge(t *testing.T) {
	p := defaultHedgeParams()
	p.Keys, p.Servers, p.Requests, p.StallRate = 50, 10, 200, 0.05
	run := func() []hedgeOutcome {
		outs, err := runHedge(context.Background(), p, Options{Seed: 3, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	a, b := run(), run()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("two runs with one seed differ (-first +second):\n%s", diff)
	}
	if len(a) != len(hedgeFleets)*len(hedgeStrategies) {
		t.Fatalf("%d outcomes, want %d", len(a), len(hedgeFleets)*len(hedgeStrategies))
	}
	for i, o := range a {
		fl, st := hedgeFleets[i/len(hedgeStrategies)], hedgeStrategies[i%len(hedgeStrategies)]
		if o.Fleet != fl || o.Strategy != st {
			t.Errorf("outcome %d is %s/%s, want %s/%s", i, o.Fleet, o.Strategy, fl, st)
		}
		if len(o.Latencies) != p.Requests || !slices.IsSorted(o.Latencies) {
			t.Errorf("%s/%s: %d latencies (sorted: %v), want %d sorted", fl, st, len(o.Latencies), slices.IsSorted(o.Latencies), p.Requests)
		}
		if o.P50 > o.P99 || o.P99 > o.P999 {
			t.Errorf("%s/%s: percentiles out of order: %v %v %v", fl, st, o.P50, o.P99, o.P999)
		}
	}
}

// TestHedgeFleetExact: a fleet's strategies run together, reading the
// fleet's draws from one tape, with primaries that nothing can drop
// started ahead of their instant (aheadAt), a fixed hedge's keys
// settled without an event at their answer (answerEvents), and tied
// requests on the saturated fleet taken from the unhedged run
// (tiedOnShard), compute exactly what each strategy computes alone, with
// a source of its own, every copy started by serve, an event at every
// answer another copy may still beat, and every twin run.
func TestHedgeFleetExact(t *testing.T) {
	// Two threads and frequent stalls, so that copies queue and stalls
	// begin while they do; then eight threads, so that a message's keys
	// mostly start at once and the rest before the hedge delay.
	small := defaultHedgeParams()
	small.Keys, small.Servers, small.Threads, small.Requests, small.StallRate = 100, 20, 2, 300, 0.5
	wide := defaultHedgeParams()
	wide.Keys, wide.Servers, wide.Requests, wide.StallRate = 200, 20, 300, 0.05
	for _, c := range []struct {
		p    *hedgeParams
		seed uint64
	}{{small, 1}, {small, 2}, {wide, 3}} {
		p, seed := c.p, c.seed
		for fl := range len(hedgeFleets) {
			got := runHedgeFleet(nil, seed, p, fleet(fl))
			for st := range hedgeStrategies {
				draws := &fleetDraws{src: rand.New(rand.NewPCG(seed, engine.Mix(1<<40+uint64(fl))))}
				e := engine.New(seed, uint64(fl*len(hedgeStrategies)+st))
				r, err := newHedgeRun(e, p, fleet(fl), st, draws)
				if err != nil {
					t.Fatal(err)
				}
				r.ahead, r.answerEvents = false, st != hedgeTied
				end := hedgeEnd(p, fleet(fl))
				e.Run(r, end)
				want := r.finish(end)
				// Requests may end in another order (a fixed hedge's key
				// is settled when its other copy starts or is dropped, not
				// at its answer's arrival): compare the latencies sorted,
				// as runHedge reports them.
				slices.Sort(want.latencies)
				slices.Sort(got[st].latencies)
				if diff := cmp.Diff(want, got[st], cmp.AllowUnexported(hedgeOut{})); diff != "" {
					t.Errorf("seed %d, %s fleet, %s: together and alone differ (-alone +together):\n%s", seed, hedgeFleets[fl], hedgeStrategies[st], diff)
				}
				if len(want.latencies) != p.Requests {
					t.Errorf("seed %d, %s fleet, %s: %d latencies, want %d", seed, hedgeFleets[fl], hedgeStrategies[st], len(want.latencies), p.Requests)
				}
			}
		}
	}
}

// BenchmarkHedgeFleet runs one fleet's four strategies together at the
// report's sizes (1000 keys, 100 servers), with fewer requests.
func BenchmarkHedgeFleet(b *testing.B) {
	p := defaultHedgeParams()
	p.Requests = 1000
	for fl, name := range hedgeFleets {
		b.Run(name, func(b *testing.B) {
			for i := range b.N {
				outs := runHedgeFleet(nil, uint64(i+1), p, fleet(fl))
				for _, o := range outs {
					if o.err != nil {
						b.Fatal(o.err)
					}
				}
			}
		})
	}
}
