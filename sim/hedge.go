package sim

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/quantile"
)

const deanBarroso = `Dean and Barroso, "The Tail at Scale", Communications of the ACM 56(2), 2013, https://doi.org/10.1145/2408776.2408794`

func init() { register(hedgeScenario{}) }

// HedgeParams are the parameters of the hedge scenario.
type HedgeParams struct {
	// Keys is the fan-out of each request and Servers the fleet
	// (--keys, --servers); each key is read from a random server, a hedge
	// or tied copy from another. Threads is each server's worker pool
	// (--threads).
	Keys, Servers, Threads int
	// Requests is the number of fan-out requests per run (--requests).
	Requests int
	// Rate is the requests per second on the fleet with interference
	// (--rate); SaturatedLoad is the utilisation of the uniformly
	// saturated fleet without hedging (--saturated-load).
	Rate          float64
	SaturatedLoad float64
	// Service is the median service time of one key and Sigma the spread
	// of its log-normal distribution (--service, --sigma).
	Service time.Duration
	Sigma   float64
	// StallRate is how often each server stalls (per second) and
	// StallMean the mean length of a stall, during which it starts no
	// work: background compaction, garbage collection, a noisy neighbour
	// (--stall-rate, --stall-mean).
	StallRate float64
	StallMean time.Duration
	// Delay is the fixed hedge delay (--delay).
	Delay time.Duration
	// Hop is the one-way network delay inside the data centre (--hop).
	Hop time.Duration
}

func defaultHedgeParams() *HedgeParams {
	return &HedgeParams{Keys: 1000, Servers: 100, Threads: 8, Requests: 5000, Rate: 20,
		SaturatedLoad: 0.97, Service: time.Millisecond, Sigma: 1.0,
		StallRate: 0.0005, StallMean: 500 * time.Millisecond, Delay: 10 * time.Millisecond, Hop: 250 * time.Microsecond}
}

// Register implements Params.
func (p *HedgeParams) Register(fs *flag.FlagSet) {
	fs.IntVar(&p.Keys, "keys", p.Keys, "keys read by each request (fan-out)")
	fs.IntVar(&p.Servers, "servers", p.Servers, "servers in the fleet")
	fs.IntVar(&p.Threads, "threads", p.Threads, "worker threads per server")
	fs.IntVar(&p.Requests, "requests", p.Requests, "fan-out requests per run")
	fs.Float64Var(&p.Rate, "rate", p.Rate, "requests per second on the fleet with interference")
	fs.Float64Var(&p.SaturatedLoad, "saturated-load", p.SaturatedLoad, "utilisation of the saturated fleet without hedging")
	fs.DurationVar(&p.Service, "service", p.Service, "median service time of one key")
	fs.Float64Var(&p.Sigma, "sigma", p.Sigma, "spread of the log-normal service time")
	fs.Float64Var(&p.StallRate, "stall-rate", p.StallRate, "stalls per second per server")
	fs.DurationVar(&p.StallMean, "stall-mean", p.StallMean, "mean length of a stall")
	fs.DurationVar(&p.Delay, "delay", p.Delay, "fixed hedge delay")
	fs.DurationVar(&p.Hop, "hop", p.Hop, "one-way network delay")
}

// Validate implements Params.
func (p *HedgeParams) Validate() error {
	for _, err := range []error{
		checkPositive("keys", p.Keys), checkAtMost("keys", p.Keys, 100000),
		checkPositive("servers", p.Servers), checkAtMost("servers", p.Servers, 30000),
		checkPositive("threads", p.Threads), checkAtMost("threads", p.Threads, 1000),
		checkPositive("requests", p.Requests), checkPositive("rate", p.Rate),
		checkPositive("saturated-load", p.SaturatedLoad), checkPositive("service", p.Service),
		checkPositive("sigma", p.Sigma), checkPositive("stall-mean", p.StallMean),
		checkPositive("delay", p.Delay), checkPositive("hop", p.Hop),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case p.Servers < 2:
		return invalid("servers", "a hedge needs a second server")
	case float64(p.Keys)*float64(p.Requests) > 5e7:
		return invalid("requests", "--keys times --requests is more than 50000000 reads")
	case p.SaturatedLoad >= 1:
		return invalid("saturated-load", "%v is not below 1: the queues would grow without bound", p.SaturatedLoad)
	case p.Sigma > 4:
		return invalid("sigma", "%v is above 4", p.Sigma)
	case p.StallRate < 0:
		return invalid("stall-rate", "%v is negative", p.StallRate)
	case p.load(p.Rate) >= 1:
		return invalid("rate", "%v requests per second would keep the servers busy %.0f%% of the time", p.Rate, 100*p.load(p.Rate))
	}
	return nil
}

// Values implements Params.
func (p *HedgeParams) Values() map[string]any {
	return map[string]any{"keys": p.Keys, "servers": p.Servers, "threads": p.Threads,
		"requests": p.Requests, "rate": p.Rate, "saturated-load": p.SaturatedLoad,
		"service": p.Service.String(), "sigma": p.Sigma, "stall-rate": p.StallRate,
		"stall-mean": p.StallMean.String(), "delay": p.Delay.String(), "hop": p.Hop.String()}
}

// Quick implements Params: 2000 requests per run instead of 5000 (the
// p99.9 is then the second-slowest request).
func (p *HedgeParams) Quick() { p.Requests = 2000 }

// meanService is the mean of the log-normal service time.
func (p *HedgeParams) meanService() float64 {
	return float64(p.Service) * math.Exp(p.Sigma*p.Sigma/2)
}

// load is the servers' utilisation at rate requests per second, without
// hedges.
func (p *HedgeParams) load(rate float64) float64 {
	perServer := rate * float64(p.Keys) / float64(p.Servers)
	return perServer * p.meanService() / float64(time.Second) / float64(p.Threads)
}

// saturatedRate is the request rate that keeps the servers SaturatedLoad
// busy.
func (p *HedgeParams) saturatedRate() float64 { return p.Rate * p.SaturatedLoad / p.load(p.Rate) }

// Strategies of the hedge scenario, as indices into hedgeStrategies.
const (
	hedgeNone = iota
	hedgeFixed
	hedgeAdaptive
	hedgeAdaptive10
	hedgeTied
)

var (
	hedgeStrategies = []string{"no hedge", "fixed hedge", "adaptive p95 hedge", "adaptive p95, 10% budget", "tied requests"}
	hedgeFleets     = []string{"interference", "saturated"}
)

type hedgeScenario struct{}

func (hedgeScenario) Name() string { return "hedge" }
func (hedgeScenario) Describe() string {
	return "a 1000-key fan-out over 100 servers that stall now and then: tail latency and extra requests with no hedge, a fixed 10 ms hedge, the adaptive p95 hedge and tied requests; then a uniformly saturated fleet where hedging stops paying (Dean and Barroso 2013)"
}
func (hedgeScenario) Population() string { return "open" }
func (hedgeScenario) Params() Params     { return defaultHedgeParams() }

func (hedgeScenario) Run(ctx context.Context, ps Params, o Options) (*Result, error) {
	p, ok := ps.(*HedgeParams)
	if !ok {
		return nil, fmt.Errorf("%w: hedge got %T", ErrInvalidParams, ps)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ns := len(hedgeStrategies)
	outs, err := sweep(ctx, o, len(hedgeFleets)*ns, func(i int) hedgeOut {
		return runHedge(ctx.Done(), o.Seed, uint64(i), p, i/ns == 1, i%ns)
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "hedge", Population: "open", Params: p.Values(),
		Columns: []string{"fleet", "strategy", "p50_ms", "p99_ms", "p999_ms", "extra_sent_pct",
			"extra_executed_pct", "hedge_delay_ms", "hedging_suspended"}}
	rows := make([]hedgeRow, len(outs))
	for i, out := range outs {
		if out.err != nil {
			return nil, out.err
		}
		r := measureHedge(out)
		rows[i] = r
		res.Rows = append(res.Rows, Row{"fleet": hedgeFleets[i/ns], "strategy": hedgeStrategies[i%ns],
			"p50_ms": round(r.p50, 1), "p99_ms": round(r.p99, 1), "p999_ms": round(r.p999, 1),
			"extra_sent_pct": round(r.sent, 2), "extra_executed_pct": round(r.executed, 2),
			"hedge_delay_ms": round(ms(out.delay), 2), "hedging_suspended": out.suspended})
	}
	for f, fleet := range hedgeFleets {
		c := Chart{Name: "hedge_" + fleet, Title: "Request latency percentiles, " + fleet + " fleet",
			XLabel: "percentile", YLabel: "latency (ms), log scale", XScale: ScaleNines, YScale: ScaleLog}
		for s, name := range hedgeStrategies {
			r := rows[f*ns+s]
			c.Series = append(c.Series, Series{Name: name, X: []float64{50, 99, 99.9},
				Y: []float64{round(r.p50, 1), round(r.p99, 1), round(r.p999, 1)}})
		}
		res.Charts = append(res.Charts, c)
	}
	res.Claims = hedgeClaims(p, rows, outs, ns)
	return res, nil
}

type hedgeRow struct {
	p50, p99, p999 float64 // ms
	sent, executed float64 // extra, percent of keys
}

func measureHedge(out hedgeOut) hedgeRow {
	lat := out.latencies
	slices.Sort(lat)
	q := func(f float64) float64 { return ms(quantile.Exact(lat, f)) }
	keys := float64(out.keys)
	return hedgeRow{p50: q(0.5), p99: q(0.99), p999: q(0.999),
		sent: 100 * float64(out.sent-out.keys) / keys, executed: 100 * float64(out.executed-out.keys) / keys}
}

func hedgeClaims(p *HedgeParams, rows []hedgeRow, outs []hedgeOut, ns int) []Claim {
	const none, fixd, adapt, adapt10, tied = hedgeNone, hedgeFixed, hedgeAdaptive, hedgeAdaptive10, hedgeTied
	i, s := rows[:ns], rows[ns:]
	return []Claim{
		{
			Source: deanBarroso,
			Claim: fmt.Sprintf("a %v hedge cuts the p99.9 of a %d-way fan-out by an order of magnitude (1800 ms to 74 ms) for a few percent more requests (2%%)",
				p.Delay, p.Keys),
			Measured: fmt.Sprintf("p99.9 %.0f ms to %.0f ms (%.1fx) for %.1f%% more requests", i[none].p999, i[fixd].p999, i[none].p999/i[fixd].p999, i[fixd].sent),
			Holds:    i[none].p999 >= 10*i[fixd].p999 && i[fixd].sent <= 5,
		},
		{
			Source:   deanBarroso,
			Claim:    "hedging after the 95th-percentile latency cuts the tail while keeping extra requests near 5%",
			Measured: fmt.Sprintf("p99.9 %.0f ms to %.0f ms for %.1f%% more requests (delay settled at %.1f ms); with a 10%% budget instead of the default 5%%: %.0f ms for %.1f%% more", i[none].p999, i[adapt].p999, i[adapt].sent, ms(outs[adapt].delay), i[adapt10].p999, i[adapt10].sent),
			Holds:    i[adapt].p999 <= i[none].p999/5 && i[adapt].sent <= 6,
		},
		{
			Source:   deanBarroso,
			Claim:    "tied requests (the twin follows after two network delays; whichever starts first cancels the other) cut the p99.9 by a third or more for little extra work (98 to 51 ms and 159 to 108 ms, under 1% more disk work, in the paper)",
			Measured: fmt.Sprintf("p99.9 %.0f ms to %.0f ms; %.1f%% more executions (%.0f%% more sent)", i[none].p999, i[tied].p999, i[tied].executed, i[tied].sent),
			Holds:    i[tied].p999 <= 0.67*i[none].p999 && i[tied].executed <= 5,
		},
		{
			Source:   deanBarroso,
			Claim:    "on a uniformly saturated fleet hedging stops paying: a second server is as slow as the first",
			Measured: fmt.Sprintf("saturated p99: %.1f ms without hedging, %.1f ms with a fixed hedge (%.1f%% more requests)", s[none].p99, s[fixd].p99, s[fixd].sent),
			Holds:    s[fixd].p99 >= 0.8*s[none].p99,
		},
		{
			Source:   deanBarroso,
			Claim:    "the adaptive hedger backs off on the saturated fleet: its delay rises with the latencies and its extra requests stay within its 5% budget, where a fixed delay's grow",
			Measured: fmt.Sprintf("adaptive delay %.1f ms saturated vs %.1f ms with interference; %.1f%% more requests vs %.1f%% for the fixed hedge; hedging suspended at the end: %v", ms(outs[ns+adapt].delay), ms(outs[adapt].delay), s[adapt].sent, s[fixd].sent, outs[ns+adapt].suspended),
			Holds:    outs[ns+adapt].delay > outs[adapt].delay && s[adapt].sent <= 6 && s[adapt].sent < s[fixd].sent/2,
		},
	}
}

// Events of the hedge model.
const (
	hArrival int32 = iota // the next fan-out request arrives
	hArrive               // copy id reaches its server; arg packs gen and server
	hDone                 // copy id's service ends; arg packs gen and server
	hReply                // copy id's answer reaches the client; arg is gen
	hTimer                // leaf id/2's hedge delay (or tied twin's delay) passed; arg is gen
	hCancel               // a tied twin's cancellation reaches copy id; arg packs gen and server
	hStall                // server id stalls
	hResume               // server id's stall ends
)

type hedgeOut struct {
	latencies  []time.Duration // per request
	keys, sent int64           // reads, and copies sent
	executed   int64           // copies a server worked on
	delay      time.Duration   // the hedge delay at the end
	suspended  bool            // the hedger had suspended hedging at the end
	unfinished int             // requests still open when the run stopped
	err        error
}

// hLeaf is one key's read: copy 0 is the primary, copy 1 the hedge or
// tied twin. gen changes each time the slot is reused, so events and
// queue entries of a finished read are recognised and dropped: that is
// how losers are cancelled.
type hLeaf struct {
	gen       uint32
	req       int32
	start     time.Duration
	server    [2]int32
	sent      [2]bool
	cancelled [2]bool
}

type hServer struct {
	busy    int
	queue   []int64 // copy<<32 | gen
	head    int
	stalled time.Duration // no new work starts before this
	waking  bool          // an hResume is scheduled
}

type hedgeRun struct {
	p         *HedgeParams
	strategy  int
	hedger    *hedge.Hedger // nil for no hedge and tied
	leaves    []hLeaf
	free      []int32
	remaining []int32 // per request: keys not yet read
	started   []time.Duration
	servers   []hServer
	env       *rand.Rand // the fleet's own draws: stalls and key placement
	rate      float64
	arrived   int
	out       hedgeOut
}

func runHedge(done <-chan struct{}, seed, stream uint64, p *HedgeParams, saturated bool, strategy int) hedgeOut {
	e := newEngine(seed, stream)
	e.done = done
	r := &hedgeRun{p: p, strategy: strategy, servers: make([]hServer, p.Servers), rate: p.Rate,
		remaining: make([]int32, p.Requests), started: make([]time.Duration, p.Requests)}
	// Every strategy on a fleet sees the same stalls and the same key
	// placement (common random numbers): the fleet's draws come from a
	// source of their own, seeded by the fleet alone.
	fleet := uint64(0)
	if saturated {
		fleet = 1
	}
	r.env = rand.New(rand.NewPCG(seed, mix(1<<40+fleet)))
	var err error
	if r.hedger, err = newHedger(strategy, p, e.Now); err != nil {
		return hedgeOut{err: err}
	}
	if saturated {
		r.rate = p.saturatedRate()
	} else if p.StallRate > 0 {
		for s := range p.Servers {
			e.after(r.stallGap(), hStall, int32(s), 0)
		}
	}
	e.after(0, hArrival, 0, 0)
	end := time.Duration(float64(p.Requests)/r.rate*float64(time.Second)) + time.Minute
	e.run(r, end)
	for _, n := range r.remaining {
		if n > 0 {
			r.out.unfinished++
			r.out.latencies = append(r.out.latencies, end) // counted as at least the run's length
		}
	}
	if r.hedger != nil {
		r.out.delay, _ = r.hedger.Delay()
		r.out.suspended = r.hedger.Suspended()
	}
	return r.out
}

// newHedger builds the strategy's hedger (nil for no hedge and tied) on
// the run's virtual clock: the adaptive hedgers' budget is built as
// hedge.New builds its default, a ratio with no floor, but with now as
// its clock, so that its 10 s window is virtual time and a run's result
// does not depend on how long it takes on the machine. The adaptive
// hedger with a 10% budget has more than its quantile spends in steady
// state, to show what the default 5% leaves for bursts.
func newHedger(strategy int, p *HedgeParams, now func() time.Time) (*hedge.Hedger, error) {
	ratio := hedge.DefaultBudgetRatio
	switch strategy {
	case hedgeFixed:
		return hedge.New(hedge.Config{Delay: p.Delay, Budget: budget.Unlimited, MinWinShare: -1})
	case hedgeAdaptive:
	case hedgeAdaptive10:
		ratio = 0.1
	default:
		return nil, nil
	}
	b, err := budget.NewRatio(budget.RatioConfig{Ratio: ratio, NoFloor: true, Now: now})
	if err != nil {
		return nil, err
	}
	return hedge.New(hedge.Config{Budget: b})
}

// stallGap draws the time to a server's next stall.
func (r *hedgeRun) stallGap() time.Duration {
	return time.Duration(r.env.ExpFloat64() / r.p.StallRate * float64(time.Second))
}

func pack(gen uint32, server int32) int64 { return int64(gen)<<32 | int64(server) }
func unpack(arg int64) (uint32, int32)    { return uint32(arg >> 32), int32(arg & 0xffffffff) }

func (r *hedgeRun) handle(e *engine, ev event) {
	switch ev.kind {
	case hArrival:
		r.arrive(e)
	case hArrive:
		gen, s := unpack(ev.arg)
		leaf := &r.leaves[ev.id/2]
		if leaf.gen != gen || leaf.cancelled[ev.id%2] {
			return // the read finished or the twin started: dropped
		}
		sv := &r.servers[s]
		sv.queue = append(sv.queue, int64(ev.id)<<32|int64(gen))
		r.serve(e, s)
	case hDone:
		gen, s := unpack(ev.arg)
		r.servers[s].busy--
		r.serve(e, s)
		if r.leaves[ev.id/2].gen == gen {
			e.after(e.normal(r.p.Hop, r.p.Hop/5), hReply, ev.id, int64(gen))
		}
	case hReply:
		if r.leaves[ev.id/2].gen == uint32(ev.arg) {
			r.finish(e, ev.id)
		}
	case hTimer:
		leaf := &r.leaves[ev.id/2]
		if leaf.gen != uint32(ev.arg) || r.hedger != nil && !r.hedger.Admit() {
			return
		}
		r.send(e, ev.id/2*2+1)
	case hCancel:
		gen, _ := unpack(ev.arg)
		if leaf := &r.leaves[ev.id/2]; leaf.gen == gen {
			leaf.cancelled[ev.id%2] = true
		}
	case hStall:
		sv := &r.servers[ev.id]
		sv.stalled = max(sv.stalled, e.elapsed()+time.Duration(r.env.ExpFloat64()*float64(r.p.StallMean)))
		e.after(r.stallGap(), hStall, ev.id, 0)
	case hResume:
		r.servers[ev.id].waking = false
		r.serve(e, ev.id)
	}
}

// arrive starts the next fan-out request: one read per key.
func (r *hedgeRun) arrive(e *engine) {
	q := int32(r.arrived)
	r.arrived++
	r.remaining[q] = int32(r.p.Keys)
	r.started[q] = e.elapsed()
	for range r.p.Keys {
		id := r.alloc()
		leaf := &r.leaves[id]
		leaf.req, leaf.start = q, e.elapsed()
		a := int32(r.env.IntN(r.p.Servers))
		b := int32(r.env.IntN(r.p.Servers - 1))
		if b >= a {
			b++
		}
		leaf.server = [2]int32{a, b}
		r.out.keys++
		r.send(e, 2*id)
		switch {
		case r.strategy == hedgeTied:
			// Dean and Barroso's tied requests: the twin follows after
			// twice the mean network delay, so that the first copy can
			// start and cancel it.
			e.after(2*r.p.Hop, hTimer, 2*id, int64(leaf.gen))
		case r.hedger != nil:
			if d, ok := r.hedger.Begin(); ok {
				e.after(d, hTimer, 2*id, int64(leaf.gen))
			}
		}
	}
	if r.arrived < r.p.Requests {
		e.after(time.Duration(float64(time.Second)/r.rate), hArrival, 0, 0)
	}
}

func (r *hedgeRun) alloc() int32 {
	if n := len(r.free); n > 0 {
		id := r.free[n-1]
		r.free = r.free[:n-1]
		l := &r.leaves[id]
		*l = hLeaf{gen: l.gen}
		return id
	}
	r.leaves = append(r.leaves, hLeaf{})
	return int32(len(r.leaves) - 1)
}

// send sends copy c of its read to its server.
func (r *hedgeRun) send(e *engine, c int32) {
	leaf := &r.leaves[c/2]
	leaf.sent[c%2] = true
	r.out.sent++
	e.after(e.normal(r.p.Hop, r.p.Hop/5), hArrive, c, pack(leaf.gen, leaf.server[c%2]))
}

// serve starts queued work on server s while it has free threads and is
// not stalled, skipping copies whose read finished or was cancelled.
func (r *hedgeRun) serve(e *engine, s int32) {
	sv := &r.servers[s]
	for sv.busy < r.p.Threads && sv.head < len(sv.queue) {
		if now := e.elapsed(); now < sv.stalled {
			if !sv.waking {
				sv.waking = true
				e.at(sv.stalled, hResume, s, 0)
			}
			return
		}
		x := sv.queue[sv.head]
		sv.head++
		c, gen := int32(x>>32), uint32(x)
		leaf := &r.leaves[c/2]
		if leaf.gen != gen || leaf.cancelled[c%2] {
			continue
		}
		sv.busy++
		r.out.executed++
		e.after(e.lognormal(r.p.Service, r.p.Sigma), hDone, c, pack(gen, s))
		if r.strategy == hedgeTied {
			// Tell the twin's server, even if the twin has not reached
			// it yet: it drops the twin on arrival.
			twin := c/2*2 + (1 - c%2)
			e.after(e.normal(r.p.Hop, r.p.Hop/5), hCancel, twin, pack(gen, leaf.server[1-c%2]))
		}
	}
	if sv.head == len(sv.queue) {
		sv.queue, sv.head = sv.queue[:0], 0
	} else if sv.head > 1024 && sv.head > len(sv.queue)/2 {
		sv.queue = append(sv.queue[:0], sv.queue[sv.head:]...)
		sv.head = 0
	}
}

// finish completes the read whose copy c answered first.
func (r *hedgeRun) finish(e *engine, c int32) {
	id := c / 2
	leaf := &r.leaves[id]
	if r.hedger != nil {
		r.hedger.Observe(e.elapsed() - leaf.start)
		if leaf.sent[1] {
			r.hedger.Result(c%2 == 1)
		}
		r.hedger.End(nil) // reads do not fail in this model
	}
	q := leaf.req
	r.remaining[q]--
	if r.remaining[q] == 0 {
		r.out.latencies = append(r.out.latencies, e.elapsed()-r.started[q])
	}
	leaf.gen++ // every other copy of this read is now stale
	r.free = append(r.free, id)
}
