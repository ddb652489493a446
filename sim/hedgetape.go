package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/unherd/unherd/sim/internal/engine"
)

// Common random numbers, drawn once. Every strategy on a fleet sees the
// same stalls, key placement, primary service times and primary network
// delays: they come from a source of the fleet's own, seeded by the seed
// and the fleet alone, and every strategy's run takes the same draws from
// it in the same order (arrivals come at fixed instants and stalls at
// instants drawn from that source, whatever the strategy does). So the
// draws are made once per fleet, by whichever run needs one first, kept
// in a tape, and read back by the other runs: the four runs of a fleet
// advance together, half a second of virtual time at a time, and the
// tape forgets what all of them have read. A request's draws are kept
// laid out as the runs use them (hArrivalDraws), so that the others copy
// them instead of redoing the layout. Each run computes exactly what it
// would compute with a source of its own.

// fleetDraws is a fleet's tape of draws: vals[i] is draw number base+i.
// An arrival's draws take one place in it, the index of their layout in
// arrivals.
type fleetDraws struct {
	src      *rand.Rand
	vals     []int64
	base     int
	arrivals []*hArrivalDraws // made since the runs last took turns
	spare    []*hArrivalDraws // for reuse
}

// hArrivalDraws are one fan-out request's draws from its fleet's source
// (its keys' servers, its primaries' service times and network delays),
// laid out as the runs use them. Every run reads the same, so the first
// run to reach the arrival makes them and the others copy them.
type hArrivalDraws struct {
	keys    []hKeyDraws     // by primary server: the leaves' order
	pos     []int32         // key k's place in keys (k is the order of the draws)
	off     []int32         // keys[off[s]:off[s+1]] have their primary on server s
	servers []int32         // the servers with keys, in order
	hops    []time.Duration // the network delay of each one's message
}

// hKeyDraws is one key's draws.
type hKeyDraws struct {
	server            [2]int32 // primary, second copy
	service, replyHop time.Duration
}

// fleetCursor is one run's place in its fleet's tape.
type fleetCursor struct {
	d   *fleetDraws
	pos int
}

// next returns the cursor's next draw if some run made it already.
func (c *fleetCursor) next() (int64, bool) {
	if i := c.pos - c.d.base; i < len(c.d.vals) {
		c.pos++
		return c.d.vals[i], true
	}
	return 0, false
}

// put records v, just drawn from c.d.src (or an arrival's index), as the
// cursor's next draw.
func (c *fleetCursor) put(v int64) int64 {
	c.d.vals = append(c.d.vals, v)
	c.pos++
	return v
}

// forget drops the draws before pos, and every arrival's: every run has
// read them.
func (d *fleetDraws) forget(pos int) {
	if n := pos - d.base; n > 0 {
		d.vals = d.vals[:copy(d.vals, d.vals[n:])]
		d.base = pos
	}
	d.spare = append(d.spare, d.arrivals...)
	clear(d.arrivals)
	d.arrivals = d.arrivals[:0]
}

// arrivalDraws returns the next fan-out request's draws: its fleet's, if
// another run made them, or else made now, in the order a run of its own
// would make them: each key's primary server and second server, then
// each key's primary service time and reply delay, then each message's
// network delay.
func (r *hedgeRun) arrivalDraws() *hArrivalDraws {
	d := r.env.d
	if v, ok := r.env.next(); ok {
		return d.arrivals[v]
	}
	r.env.put(int64(len(d.arrivals)))
	var ad *hArrivalDraws
	if n := len(d.spare); n > 0 {
		ad, d.spare = d.spare[n-1], d.spare[:n-1]
	} else {
		ad = &hArrivalDraws{keys: make([]hKeyDraws, r.p.Keys), pos: make([]int32, r.p.Keys),
			off: make([]int32, r.p.Servers+1)}
	}
	d.arrivals = append(d.arrivals, ad)
	src, count, placed := d.src, r.count, r.placed
	clear(count)
	for k := range placed {
		a := int32(src.IntN(r.p.Servers))
		b := int32(src.IntN(r.p.Servers - 1))
		if b >= a {
			b++
		}
		if r.fleet == fleetSaturated {
			b = a // the key's shard, whichever front-end the copy goes through
		}
		placed[k] = [2]int32{a, b}
		count[a]++
	}
	ad.off[0] = 0
	ad.servers = ad.servers[:0]
	for s, n := range count {
		ad.off[s+1] = ad.off[s] + n
		if n > 0 {
			ad.servers = append(ad.servers, int32(s))
		}
	}
	copy(count, ad.off[:r.p.Servers])
	for k, sv := range placed {
		i := count[sv[0]]
		count[sv[0]]++
		ad.pos[k] = i
		// The primary's work and reply delay come from the fleet's
		// source too, so that strategies differ only where they act.
		ad.keys[i] = hKeyDraws{server: sv, service: r.draw(src), replyHop: r.hop(src)}
	}
	ad.hops = ad.hops[:0]
	for range ad.servers {
		ad.hops = append(ad.hops, r.hop(src))
	}
	return ad
}

// stallGap is the time to a server's next stall, from the fleet's draws.
func (r *hedgeRun) stallGap() time.Duration {
	if v, ok := r.env.next(); ok {
		return time.Duration(v)
	}
	return time.Duration(r.env.put(int64(r.env.d.src.ExpFloat64() / r.p.StallRate * float64(time.Second))))
}

// stallLength is the length of a stall, from the fleet's draws.
func (r *hedgeRun) stallLength() time.Duration {
	if v, ok := r.env.next(); ok {
		return time.Duration(v)
	}
	return time.Duration(r.env.put(int64(r.env.d.src.ExpFloat64() * float64(r.p.StallMean))))
}

// hedgeStep is how much virtual time the runs of a fleet advance at a
// time: short enough that the tape stays small (the loaded fleet draws
// about three values per key, 1000 keys per request, 470 requests per
// second), long enough that taking turns costs nothing.
const hedgeStep = 500 * time.Millisecond

// runHedgeFleet runs every strategy on fleet fl, together, and returns
// their outcomes in hedgeStrategies order. Run i's engine is seeded with
// stream fl*len(hedgeStrategies)+i, as if each ran alone.
func runHedgeFleet(done <-chan struct{}, seed uint64, p *hedgeParams, fl fleet) []hedgeOut {
	ns := len(hedgeStrategies)
	draws := &fleetDraws{src: rand.New(rand.NewPCG(seed, engine.Mix(1<<40+uint64(fl))))}
	outs := make([]hedgeOut, ns)
	runs := make([]*hedgeRun, 0, ns)
	engines := make([]*engine.Engine, 0, ns)
	end := hedgeEnd(p, fl)
	for strategy := range ns {
		if fl == fleetSaturated && strategy == hedgeTied {
			break // tiedOnShard: the unhedged run's outcome
		}
		e := engine.New(seed, uint64(int(fl)*ns+strategy))
		e.StopOn(done)
		r, err := newHedgeRun(e, p, fl, strategy, draws)
		if err != nil {
			outs[strategy].err = err
			return outs
		}
		runs, engines = append(runs, r), append(engines, e)
	}
	for t := time.Duration(0); t < end; {
		t = min(t+hedgeStep, end)
		low := int(^uint(0) >> 1)
		for i, r := range runs {
			engines[i].Run(r, t)
			low = min(low, r.env.pos)
		}
		draws.forget(low)
		if engines[0].Stopped() {
			return outs
		}
	}
	for i, r := range runs {
		outs[i] = r.finish(end)
	}
	if len(runs) < ns {
		outs[hedgeTied] = tiedOnShard(outs[hedgeNone])
	}
	return outs
}

// tiedOnShard is the outcome of tied requests on the saturated fleet,
// given the unhedged run's outcome there. A key's twin goes to its
// primary's own shard, two network delays after the primary: it queues
// behind it, first come first served, and the shard, which starts the
// primary first, drops the twin at once (it needs no cancellation
// message). The twin never runs, so every key is answered when and as
// without the twin: the run is the unhedged run with every twin sent,
// and simulating it would spend a queue entry and a wake-up per key on
// nothing. (A twin could reach the shard before its primary only if the
// primary's network delay exceeded the twin's by more than two mean
// hops, ten standard deviations of the spread of Hop/5.)
// TestHedgeFleetExact runs the twins and compares.
func tiedOnShard(none hedgeOut) hedgeOut {
	out := none
	out.latencies = slices.Clone(none.latencies)
	out.sent += none.keys // every twin
	return out
}

// hedgeRate is the requests per second that arrive at fleet fl: the
// stalled fleet's own rate, or the rate that loads the others to their
// utilisation.
func hedgeRate(p *hedgeParams, fl fleet) float64 {
	switch fl {
	case fleetLoaded, fleetSaturated:
		return p.saturatedRate()
	default: // fleetStalled
		return p.Rate
	}
}

// hedgeEnd is when a run on fleet fl stops: a minute after the last
// request arrived.
func hedgeEnd(p *hedgeParams, fl fleet) time.Duration {
	return time.Duration(float64(p.Requests)/hedgeRate(p, fl)*float64(time.Second)) + time.Minute
}

// newHedgeRun sets up one strategy's run on fleet fl, on engine e, with
// the fleet's draws from draws.
func newHedgeRun(e *engine.Engine, p *hedgeParams, fl fleet, strategy int, draws *fleetDraws) (*hedgeRun, error) {
	r := &hedgeRun{p: p, fleet: fl, strategy: strategy, servers: make([]hServer, p.Servers), rate: hedgeRate(p, fl),
		count: make([]int32, p.Servers), picked: make([]bool, p.Keys), placed: make([][2]int32, p.Keys),
		env: fleetCursor{d: draws}, ahead: true,
		answerEvents: strategy == hedgeDefault}
	for s := range r.servers {
		r.servers[s] = hServer{free: make([]time.Duration, p.Threads), wakeAt: -1, stallAt: never}
	}
	var err error
	if r.hedger, err = newHedger(strategy, p, e.Now); err != nil {
		return nil, err
	}
	if fl == fleetStalled && p.StallRate > 0 {
		for s := range p.Servers {
			r.stallIn(e, int32(s))
		}
	}
	e.After(0, hArrival, 0, 0)
	return r, nil
}

// finish returns the run's outcome once its engine has run to end.
func (r *hedgeRun) finish(end time.Duration) hedgeOut {
	if missing := r.arrived - len(r.out.latencies); missing > 0 {
		r.out.unfinished = missing
		for range missing {
			r.out.latencies = append(r.out.latencies, end) // counted as at least the run's length
		}
	}
	if r.hedger != nil {
		r.out.delay, _ = r.hedger.Delay()
		r.out.suspended = r.hedger.Suspended()
	}
	return r.out
}
