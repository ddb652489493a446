package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/quantile"
)

const deanBarroso = `Dean and Barroso, "The Tail at Scale", Communications of the ACM 56(2), 2013, https://doi.org/10.1145/2408776.2408794`

// hedgeParams are the parameters of the hedge scenario.
type hedgeParams struct {
	// Keys is the fan-out of each request and Servers the fleet
	// (--keys, --servers); each key is read from a random server, a hedge
	// or tied copy from another. Threads is each server's worker pool
	// (--threads).
	Keys    int `param:"keys" usage:"keys read by each request (fan-out)" check:"positive,max=100000"`
	Servers int `param:"servers" usage:"servers in the fleet" check:"positive,max=30000"`
	Threads int `param:"threads" usage:"worker threads per server" check:"positive,max=1000"`
	// Requests is the number of fan-out requests per run (--requests).
	Requests int `param:"requests" usage:"fan-out requests per run" check:"positive"`
	// Rate is the requests per second on the stalled fleet (--rate);
	// SaturatedLoad is the utilisation of the loaded and the saturated
	// fleets without hedging (--saturated-load).
	Rate          float64 `param:"rate" usage:"requests per second on the fleet with interference" check:"positive"`
	SaturatedLoad float64 `param:"saturated-load" usage:"utilisation of the loaded and saturated fleets without hedging" check:"positive"`
	// Service is the median service time of one key and Sigma the spread
	// of its log-normal distribution (--service, --sigma).
	Service time.Duration `param:"service" usage:"median service time of one key" check:"positive"`
	Sigma   float64       `param:"sigma" usage:"spread of the log-normal service time" check:"positive"`
	// StallRate is how often each server stalls (per second) and
	// StallMean the mean length of a stall, during which it starts no
	// work: background compaction, garbage collection, a noisy neighbour
	// (--stall-rate, --stall-mean).
	StallRate float64       `param:"stall-rate" usage:"stalls per second per server"`
	StallMean time.Duration `param:"stall-mean" usage:"mean length of a stall" check:"positive"`
	// Delay is the fixed hedge delay (--delay).
	Delay time.Duration `param:"delay" usage:"fixed hedge delay" check:"positive"`
	// Hop is the one-way network delay between the client and a server
	// (--hop); CancelHop is the one-way delay of a tied request's
	// cancellation from one server to the other (--cancel-hop).
	Hop       time.Duration `param:"hop" usage:"one-way network delay between client and server" check:"positive"`
	CancelHop time.Duration `param:"cancel-hop" usage:"one-way delay of a tied request's cancellation between servers" check:"positive"`
}

func defaultHedgeParams() *hedgeParams {
	return &hedgeParams{Keys: 1000, Servers: 100, Threads: 8, Requests: 5000, Rate: 20,
		SaturatedLoad: 0.97, Service: time.Millisecond, Sigma: 1.0,
		StallRate: 0.0005, StallMean: 500 * time.Millisecond, Delay: 10 * time.Millisecond,
		Hop: 250 * time.Microsecond, CancelHop: 10 * time.Microsecond}
}

// Fields implements Params: the fields tagged param, in their order.
func (p *hedgeParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags (checkFields),
// then the rules between fields.
func (p *hedgeParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
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

// Quick implements Params: 4000 requests per run instead of 5000. The
// report runs five seeds and pools their latencies, so its verdicts on
// the p99.9 rest on 20000 requests per strategy, 20 of them beyond it.
func (p *hedgeParams) Quick() { p.Requests = 4000 }

// meanService is the mean of the log-normal service time.
func (p *hedgeParams) meanService() float64 {
	return float64(p.Service) * math.Exp(p.Sigma*p.Sigma/2)
}

// load is the servers' utilisation at rate requests per second, without
// hedges.
func (p *hedgeParams) load(rate float64) float64 {
	perServer := rate * float64(p.Keys) / float64(p.Servers)
	return perServer * p.meanService() / float64(time.Second) / float64(p.Threads)
}

// saturatedRate is the request rate that keeps the servers SaturatedLoad
// busy.
func (p *hedgeParams) saturatedRate() float64 { return p.Rate * p.SaturatedLoad / p.load(p.Rate) }

// Strategies of the hedge scenario, as indices into hedgeStrategies.
const (
	hedgeNone = iota
	hedgeFixed
	hedgeDefault
	hedgeTied
)

var (
	// hedgeStrategies names the hedge scenario's strategies, in the order
	// runHedge runs them: no hedge; a fixed hedge after hedgeParams.Delay
	// with no budget and no back-off; the hedger of a zero hedge.Config
	// (on the run's virtual clock); Dean and Barroso's tied requests.
	hedgeStrategies = []string{"no hedge", "fixed hedge", "default hedger", "tied requests"}
	// hedgeFleets names the hedge scenario's fleets, in the order
	// runHedge runs them: "stalled" (low load, servers that stall now and
	// then: the fan-out of the paper), "loaded" (independent servers at
	// SaturatedLoad: a hedge can find a shorter queue) and "saturated" (a
	// shared bottleneck at SaturatedLoad: every copy of a key queues at
	// its shard, so a second copy is as slow as the first).
	hedgeFleets = []string{"stalled", "loaded", "saturated"}
)

// hedgeOutcome is one run of the hedge scenario: one fleet, one strategy.
type hedgeOutcome struct {
	// Fleet and Strategy name the run (see hedgeFleets, hedgeStrategies).
	Fleet, Strategy string
	// P50, P99 and P999 are percentiles of the requests' latencies.
	P50, P99, P999 time.Duration
	// Latencies holds every request's latency, sorted, so that runs of
	// several seeds can be pooled. A request still open when the run
	// stopped counts as the run's length.
	Latencies []time.Duration
	// Unfinished counts the requests still open when the run stopped.
	Unfinished int
	// ExtraSent and ExtraExecuted are the copies beyond one per key that
	// were sent and that a server started, as fractions of the keys read:
	// sent requests and executed work (the paper's "disk work").
	ExtraSent, ExtraExecuted float64
	// Delay is the hedger's delay at the end of the run, and Suspended
	// whether it had suspended hedging because hedges stopped winning
	// (both zero for no hedge and tied requests).
	Delay     time.Duration
	Suspended bool
}

// runHedge runs every fleet and strategy of the hedge scenario once, with
// o.Seed, over o.Workers goroutines, and returns one outcome per run,
// fleet by fleet in hedgeFleets order and within a fleet in
// hedgeStrategies order. The same parameters and seed give the same
// outcomes.
func runHedge(ctx context.Context, p *hedgeParams, o Options) ([]hedgeOutcome, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ns := len(hedgeStrategies)
	fleets, err := sweep(ctx, o, len(hedgeFleets), func(f int) []hedgeOut {
		return runHedgeFleet(ctx.Done(), o.Seed, p, fleet(f))
	})
	if err != nil {
		return nil, err
	}
	outs := slices.Concat(fleets...)
	res := make([]hedgeOutcome, len(outs))
	for i, out := range outs {
		if out.err != nil {
			return nil, out.err
		}
		lat := out.latencies
		slices.Sort(lat)
		keys := float64(out.keys)
		res[i] = hedgeOutcome{Fleet: hedgeFleets[i/ns], Strategy: hedgeStrategies[i%ns],
			P50: quantile.Exact(lat, 0.5), P99: quantile.Exact(lat, 0.99), P999: quantile.Exact(lat, 0.999),
			Latencies: lat, Unfinished: out.unfinished,
			ExtraSent: float64(out.sent-out.keys) / keys, ExtraExecuted: float64(out.executed-out.keys) / keys,
			Delay: out.delay, Suspended: out.suspended}
	}
	return res, nil
}

var hedgeScenario = define("hedge", "open",
	"a 1000-key fan-out over 100 servers that stall now and then: tail latency, extra requests and extra work with no hedge, a fixed 10 ms hedge, the default hedger and tied requests; then a loaded fleet of independent queues and a uniformly saturated one, where hedging stops paying (Dean and Barroso 2013)",
	defaultHedgeParams, runHedgeScenario)

func runHedgeScenario(ctx context.Context, p *hedgeParams, o Options) (*Result, error) {
	outs, err := runHedge(ctx, p, o)
	if err != nil {
		return nil, err
	}
	return hedgeResult(p, outs), nil
}

// hedgeResult builds the hedge scenario's table, charts and claims from
// runHedge's outcomes.
func hedgeResult(p *hedgeParams, outs []hedgeOutcome) *Result {
	ns := len(hedgeStrategies)
	res := &Result{Scenario: "hedge", Population: "open", Params: paramValues(p),
		Columns: []string{"fleet", "strategy", "p50_ms", "p99_ms", "p999_ms", "extra_sent_pct",
			"extra_executed_pct", "hedge_delay_ms", "hedging_suspended"}}
	for _, out := range outs {
		res.Rows = append(res.Rows, Row{"fleet": out.Fleet, "strategy": out.Strategy,
			"p50_ms": round(ms(out.P50), 1), "p99_ms": round(ms(out.P99), 1), "p999_ms": round(ms(out.P999), 1),
			"extra_sent_pct": round(100*out.ExtraSent, 2), "extra_executed_pct": round(100*out.ExtraExecuted, 2),
			"hedge_delay_ms": round(ms(out.Delay), 2), "hedging_suspended": out.Suspended})
	}
	for f, fl := range hedgeFleets {
		c := Chart{Name: "hedge_" + fl, Title: "Request latency percentiles, " + fl + " fleet",
			XLabel: "percentile", YLabel: "latency (ms), log scale", XScale: scaleNines, YScale: scaleLog}
		for _, out := range outs[f*ns : (f+1)*ns] {
			c.Series = append(c.Series, Series{Name: out.Strategy, X: []float64{50, 99, 99.9},
				Y: []float64{round(ms(out.P50), 1), round(ms(out.P99), 1), round(ms(out.P999), 1)}})
		}
		res.Charts = append(res.Charts, c)
	}
	res.Claims = hedgeClaims(p, outs)
	return res
}

func hedgeClaims(p *hedgeParams, outs []hedgeOutcome) []Claim {
	ns := len(hedgeStrategies)
	st, sat := outs[:ns], outs[2*ns:]
	none, fixd, def, tied := st[hedgeNone], st[hedgeFixed], st[hedgeDefault], st[hedgeTied]
	cut := func(o hedgeOutcome) float64 { return float64(none.P999) / float64(max(o.P999, 1)) }
	worse := func(a, b hedgeOutcome) bool { // a worse than b at some percentile, beyond 2%
		return float64(a.P50) > 1.02*float64(b.P50) || float64(a.P99) > 1.02*float64(b.P99) || float64(a.P999) > 1.02*float64(b.P999)
	}
	return []Claim{
		{
			Source: deanBarroso,
			Claim: fmt.Sprintf("a %v hedge cuts the p99.9 of a %d-way fan-out by an order of magnitude (1800 ms to 74 ms) for a few percent more requests (2%%)",
				p.Delay, p.Keys),
			Measured: fmt.Sprintf("p99.9 %.0f ms to %.0f ms (%.1fx) for %.1f%% more requests", ms(none.P999), ms(fixd.P999), cut(fixd), 100*fixd.ExtraSent),
			Holds:    cut(fixd) >= 10 && fixd.ExtraSent <= 0.05,
		},
		{
			Source:   deanBarroso,
			Claim:    "hedging after the 95th-percentile latency (unherd's default hedger) cuts the p99.9 by an order of magnitude while keeping extra requests near 5% (at most 6%)",
			Measured: fmt.Sprintf("p99.9 %.0f ms to %.0f ms (%.1fx) for %.1f%% more requests and %.1f%% more work (delay settled at %.1f ms)", ms(none.P999), ms(def.P999), cut(def), 100*def.ExtraSent, 100*def.ExtraExecuted, ms(def.Delay)),
			Holds:    cut(def) >= 10 && def.ExtraSent <= 0.06,
		},
		{
			Source:   deanBarroso,
			Claim:    "tied requests (both copies queued; the first server to start one tells the other to drop it) cut the p99.9 by a third or more for under 1% more work",
			Measured: fmt.Sprintf("p99.9 %.0f ms to %.0f ms; %.2f%% more work executed (%.0f%% more sent; cancellation between servers %v)", ms(none.P999), ms(tied.P999), 100*tied.ExtraExecuted, 100*tied.ExtraSent, p.CancelHop),
			Holds:    float64(tied.P999) <= 0.67*float64(none.P999) && tied.ExtraExecuted <= 0.01,
		},
		{
			Source:   deanBarroso,
			Claim:    "on a uniformly saturated fleet hedging stops paying: a second copy is as slow as the first and only adds load",
			Measured: fmt.Sprintf("saturated p50/p99/p99.9: %.1f/%.1f/%.1f ms without hedging, %.1f/%.1f/%.1f ms with a fixed hedge (%.1f%% more requests, %.1f%% more work)", ms(sat[hedgeNone].P50), ms(sat[hedgeNone].P99), ms(sat[hedgeNone].P999), ms(sat[hedgeFixed].P50), ms(sat[hedgeFixed].P99), ms(sat[hedgeFixed].P999), 100*sat[hedgeFixed].ExtraSent, 100*sat[hedgeFixed].ExtraExecuted),
			Holds:    !(float64(sat[hedgeFixed].P99) < 0.98*float64(sat[hedgeNone].P99)),
		},
		{
			Source:   deanBarroso,
			Claim:    "the default hedger notices that hedges stop winning on the saturated fleet and suspends hedging, so that no percentile gets worse",
			Measured: fmt.Sprintf("saturated p50/p99/p99.9 %.1f/%.1f/%.1f ms with the default hedger (%.2f%% more requests, %.2f%% more work); hedging suspended at the end: %v", ms(sat[hedgeDefault].P50), ms(sat[hedgeDefault].P99), ms(sat[hedgeDefault].P999), 100*sat[hedgeDefault].ExtraSent, 100*sat[hedgeDefault].ExtraExecuted, sat[hedgeDefault].Suspended),
			Holds:    sat[hedgeDefault].Suspended && !worse(sat[hedgeDefault], sat[hedgeNone]),
		},
	}
}

type hedgeOut struct {
	latencies  []time.Duration // per request
	keys, sent int64           // reads, and copies sent
	executed   int64           // copies a server worked on
	delay      time.Duration   // the hedge delay at the end
	suspended  bool            // the hedger had suspended hedging at the end
	unfinished int             // requests still open when the run stopped
	err        error
}

// newHedger builds the strategy's hedger (nil for no hedge and tied) on
// the run's virtual clock. The default hedger is hedge.New(hedge.Config{})
// except that its default budget runs on now, so that the budget's
// window is virtual time and a run's result does not depend on how long
// it takes on the machine.
func newHedger(strategy int, p *hedgeParams, now func() time.Time) (*hedge.Hedger, error) {
	switch strategy {
	case hedgeFixed:
		//unherdvet:ignore misuse the simulator models the fixed-delay hedger without a budget on purpose, to compare it
		return hedge.New(hedge.Config{Delay: p.Delay, Budget: budget.Unlimited, MinWinShare: -1})
	case hedgeDefault:
		var cfg hedge.Config
		rc := cfg.DefaultBudget()
		rc.Now = now
		b, err := budget.NewRatio(rc)
		if err != nil {
			return nil, err
		}
		cfg.Budget = b
		return hedge.New(cfg)
	}
	return nil, nil
}
