package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
)

const huangMetastable = `Huang et al., "Metastable Failures in the Wild", OSDI 2022, the retry experiment, https://www.usenix.org/conference/osdi22/presentation/huang-lexiang; artifact https://github.com/lexiangh/Metastability (Retry_Metastability)`

// metastableParams are the parameters of the metastable scenario.
type metastableParams struct {
	// Rate is the open stream's new requests per second at full load
	// (--rate): Huang et al.'s 8,300.
	Rate float64 `param:"rate" usage:"open stream: new requests per second at full load" check:"positive,max=100000"`
	// Threads and Service are the server's workers and their mean service
	// time at full CPU (--threads, --service): 22 workers of 1 ms serve
	// 22,000 requests per second, 2.65 times the load.
	Threads int           `param:"threads" usage:"server: workers taking requests from one FIFO queue" check:"positive,max=10000"`
	Service time.Duration `param:"service" usage:"server: mean (exponential) service time at full CPU" check:"positive"`
	// Timeout is the client's timeout on each attempt (--timeout): 3 s.
	Timeout time.Duration `param:"timeout" usage:"client: timeout of each attempt" check:"positive"`
	// Cut and SmallCut are the trigger's cuts to the server's CPU
	// (--cut, --small-cut): 80% and 78%.
	Cut      float64 `param:"cut" usage:"trigger: share of the server's CPU taken away" check:"positive,fraction"`
	SmallCut float64 `param:"small-cut" usage:"trigger: the smaller cut, which the system survives" check:"positive,fraction"`
	// Length and ShortLength are how long the trigger lasts (--length,
	// --short-length): 10 s and 9 s.
	Length      time.Duration `param:"length" usage:"trigger: how long the cut lasts" check:"positive"`
	ShortLength time.Duration `param:"short-length" usage:"trigger: the shorter cut, which the system survives" check:"positive"`
	// LowLoad is the lower load's share of Rate (--low-load): 0.7, 30%
	// lower.
	LowLoad float64 `param:"low-load" usage:"the lower load, as a share of --rate" check:"positive,fraction"`
	// Before is the healthy time before the trigger (--before); After is
	// how long the run goes on after the trigger ends (--after). The
	// outcome is judged on the last 10 s.
	Before time.Duration `param:"before" usage:"healthy time before the trigger" check:"positive"`
	After  time.Duration `param:"after" usage:"time after the trigger ends; the outcome is judged on its last 10s" check:"positive"`
	// MapCuts and MapLengths are the triggers of the tipping-point map
	// (--map-cuts, --map-lengths; see TippingPoints): cuts of 60% to 95%
	// of the CPU in steps of 5 points (at the published setup a cut under
	// 62% leaves the server more capacity than its load), each for 2 to
	// 30 s. Both are ascending, cuts in percent and lengths in seconds.
	MapCuts    []int `param:"map-cuts" usage:"tipping-point map: the CPU cuts tried, in percent, ascending" check:"positive,max=99"`
	MapLengths []int `param:"map-lengths" usage:"tipping-point map: the trigger lengths tried, in seconds, ascending" check:"positive,max=600"`
	// user is a user's policy, run as one more row (SetPolicy).
	user *policySpec
}

func defaultMetastableParams() *metastableParams {
	return &metastableParams{Rate: 8300, Threads: 22, Service: time.Millisecond, Timeout: 3 * time.Second,
		Cut: 0.8, SmallCut: 0.78, Length: 10 * time.Second, ShortLength: 9 * time.Second, LowLoad: 0.7,
		Before: 10 * time.Second, After: 60 * time.Second,
		MapCuts: []int{60, 65, 70, 75, 80, 85, 90, 95}, MapLengths: []int{2, 4, 6, 8, 10, 12, 15, 20, 25, 30}}
}

// Fields implements Params: the fields tagged param, in their order.
func (p *metastableParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags, then the rules
// between fields.
func (p *metastableParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
	}
	switch {
	case p.Cut >= 1:
		return invalid("cut", "%v leaves the server no CPU", p.Cut)
	case p.SmallCut >= 1:
		return invalid("small-cut", "%v leaves the server no CPU", p.SmallCut)
	case p.Before < 5*time.Second:
		return invalid("before", "%v is under 5s", p.Before)
	case p.After < 20*time.Second:
		return invalid("after", "%v is under 20s", p.After)
	case p.Before+max(p.Length, p.ShortLength)+p.After > 10*time.Minute:
		return invalid("after", "the run (before, trigger and after) is over 10 minutes")
	case len(p.MapCuts) > 50:
		return invalid("map-cuts", "%d cuts are more than 50", len(p.MapCuts))
	case len(p.MapLengths) > 50:
		return invalid("map-lengths", "%d lengths are more than 50", len(p.MapLengths))
	case p.Before+time.Duration(slices.Max(p.MapLengths))*time.Second+p.After > 10*time.Minute:
		return invalid("map-lengths", "a run of the map (before, its longest trigger and after) is over 10 minutes")
	}
	for _, f := range []struct {
		name string
		xs   []int
	}{{"map-cuts", p.MapCuts}, {"map-lengths", p.MapLengths}} {
		for i := 1; i < len(f.xs); i++ {
			if f.xs[i] <= f.xs[i-1] {
				return invalid(f.name, "%s is not ascending", strings.ReplaceAll(strings.Trim(fmt.Sprint(f.xs), "[]"), " ", ","))
			}
		}
	}
	return nil
}

// Quick implements Params: the report's size is the published one.
func (p *metastableParams) Quick() {}

// Policies of the metastable scenario's rows.
const (
	msResend  = "resend"            // Huang et al.'s client: resend at once, without limit
	msDefault = "unherd default"    // retry's defaults, with its token bucket
	msLimited = "default + limiter" // the same, against a server with limit.Limiter and shedding
)

// msCase is one row of the metastable scenario.
type msCase struct {
	cut       float64
	length    time.Duration
	load      float64 // share of Rate
	policy    string
	published string // Huang et al.'s outcome; empty for unherd's rows
}

// cases are Huang et al.'s four runs, then unherd's default client and
// the default with the server's limiter under the trigger that keeps the
// first client down.
func (p *metastableParams) cases() []msCase {
	return []msCase{
		{p.SmallCut, p.Length, 1, msResend, outcomeRecovers},
		{p.Cut, p.Length, 1, msResend, outcomeDown},
		{p.Cut, p.ShortLength, 1, msResend, outcomeRecovers},
		{p.Cut, p.Length, p.LowLoad, msResend, outcomeRecovers},
		{p.Cut, p.Length, 1, msDefault, ""},
		{p.Cut, p.Length, 1, msLimited, ""},
	}
}

// Outcomes of a metastable run.
const (
	outcomeRecovers = "recovers"
	outcomeDown     = "stays down"
	// outcomeNever is a run whose goodput was under 95% of the load
	// before the trigger already.
	outcomeNever = "never healthy"
)

// policy builds the row's client policy: one shared by every call, as
// one process shares one retry.Policy per dependency.
func (c msCase) retryPolicy(p *metastableParams) (*retry.Policy, error) {
	if c.policy == msYours {
		return nil, nil // built on the run's clock: userModel
	}
	if c.policy == msResend {
		return retry.New(retry.Config{MaxAttempts: math.MaxInt, Backoff: immediate(), Budget: budget.Unlimited, AttemptTimeout: p.Timeout})
	}
	return retry.New(retry.Config{AttemptTimeout: p.Timeout})
}

var metastableScenario = withSeeds(define("metastable", "open",
	"a short cut to a server's CPU leaves it down for good when callers time out and resend at once: Huang et al.'s four retry runs (78% or 80% for 10 s or 9 s, full or 30% lower load), unherd's default with and without the server's limiter, and the tipping point of each over trigger size and length (OSDI 2022)",
	defaultMetastableParams, runMetastableScenario), metastableSeeds)

// withSeeds returns s with its own run over several seeds.
func withSeeds(s *scenario, seeds func(ctx context.Context, p Params, o Options, n int) (*Result, error)) *scenario {
	s.seeds = seeds
	return s
}

// runMetastableScenario runs the scenario's rows on o.Seed, then its
// tipping-point map.
func runMetastableScenario(ctx context.Context, p *metastableParams, o Options) (*Result, error) {
	first, second := halves(o)
	res, err := runMetastableRows(ctx, p, first)
	if err != nil {
		return nil, err
	}
	return withTippingChart(ctx, res, p, second)
}

// metastableSeeds runs the scenario's rows on n seeds and merges them
// (RunSeeds), then its tipping-point map once, on the first seed: the
// map runs each trigger on a seed of its own already.
func metastableSeeds(ctx context.Context, ps Params, o Options, n int) (*Result, error) {
	p, err := validParams[*metastableParams]("metastable", ps)
	if err != nil {
		return nil, err
	}
	first, second := halves(o)
	results, err := eachSeed(first, n, func(o Options) (*Result, error) { return runMetastableRows(ctx, p, o) })
	if err != nil {
		return nil, err
	}
	return withTippingChart(ctx, mergeSeeds(o.Seed, results), p, second)
}

// halves splits o's progress in two: the first half for the rows, the
// second for the map, so that it never goes back between the two.
func halves(o Options) (first, second Options) {
	first, second = o, o
	if o.Progress != nil {
		first.Progress = func(d, t int) {
			if t > 0 {
				o.Progress(100*d/t, 200)
			}
		}
		second.Progress = func(d, t int) {
			if t > 0 {
				o.Progress(100+100*d/t, 200)
			}
		}
	}
	return first, second
}

// withTippingChart adds the tipping-point map of p (TippingPoints, on
// o.Seed) to res as its chart.
func withTippingChart(ctx context.Context, res *Result, p *metastableParams, o Options) (*Result, error) {
	m, err := tippingPoints(ctx, p, tipPolicies(p), o)
	if err != nil {
		return nil, err
	}
	res.Charts = append(res.Charts, m.Chart())
	res.Claims = append(res.Claims, m.claims()...)
	return res, nil
}

// runMetastableRows runs the scenario's rows: its cases on o.Seed.

// msRow is what one case measured.
type msRow struct {
	msCase
	outcome                string
	before, during, after  float64 // goodput per second
	loadAfter              float64 // attempts per second over the last 10 s
	recovery               float64 // seconds after the trigger until goodput stays back; -1 if never
	stopped                float64 // the second the run stopped as provably down; -1 if it ran to its end
	peak                   int
	wastedPct, shed, refus float64
}

func runMetastableRows(ctx context.Context, p *metastableParams, o Options) (*Result, error) {
	cases := p.withUser(p.cases())
	type out struct {
		st  *msStats
		err error
	}
	outs, err := sweep(ctx, o, len(cases), func(i int) out {
		c := cases[i]
		pol, err := c.retryPolicy(p)
		if err != nil {
			return out{err: err}
		}
		m := msModel{rate: p.Rate * c.load, threads: p.Threads, service: p.Service, timeout: p.Timeout,
			from: p.Before, to: p.Before + c.length, cut: c.cut, end: p.Before + c.length + p.After,
			limited: c.policy == msLimited, resends: c.policy == msResend}
		p.userModel(c, &m)
		st, err := runMetastable(ctx, o.Seed, uint64(i), m, pol)
		return out{st, err}
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "metastable", Population: "open", Params: paramValues(p),
		Columns: []string{"trigger", "load_rps", "policy", "published", "outcome", "goodput_before", "goodput_during", "goodput_after",
			"recovery_s", "load_after_rps", "queue_peak", "wasted_pct", "shed", "refused", "stopped_s"}}
	var rows []msRow
	for i, c := range cases {
		if outs[i].err != nil {
			return nil, outs[i].err
		}
		r := measureMetastable(p, c, outs[i].st)
		rows = append(rows, r)
		pub := r.published
		if pub == "" {
			pub = "-"
		}
		res.Rows = append(res.Rows, Row{"trigger": fmt.Sprintf("%g%% for %v", round(100*c.cut, 1), c.length),
			"load_rps": round(p.Rate*c.load, 0), "policy": c.policy, "published": pub, "outcome": r.outcome,
			"goodput_before": round(r.before, 0), "goodput_during": round(r.during, 0), "goodput_after": round(r.after, 0),
			"recovery_s": round(r.recovery, 0), "load_after_rps": round(r.loadAfter, 0), "queue_peak": r.peak,
			"wasted_pct": round(r.wastedPct, 1), "shed": round(r.shed, 0), "refused": round(r.refus, 0),
			"stopped_s": round(r.stopped, 0)})
	}
	res.Claims = metastableClaims(p, rows)
	return res, nil
}

// measureMetastable turns a run's counters into its row. Goodput is
// answers to callers still waiting, per second: before is over the 5 s
// before the trigger, during over the trigger, after over the run's last
// 10 s. The run recovers when its goodput over the last 10 s is at least
// 95% of the load offered, and had been over the 5 s before the trigger
// (else it was never healthy); its recovery is the seconds from the trigger's
// end to the first second from which every second's goodput is.
//
// A run that stopped early as provably down (msRun.provablyDown) has no
// goodput over its last 10 s, by that proof; its load after, queue peak
// and wasted work are measured up to the stop, the load after over the
// 10 s before it. A map cell that stopped as recovered (msRun.recovered)
// is measured over the 10 s before its stop in place of the run's last.
func measureMetastable(p *metastableParams, c msCase, st *msStats) msRow {
	r := msRow{msCase: c, peak: st.peak, shed: float64(st.shed), refus: float64(st.refused), recovery: -1, stopped: -1}
	rate := p.Rate * c.load
	from, to := int(p.Before/time.Second), int((p.Before+c.length)/time.Second)
	end := to + int(p.After/time.Second)
	if st.stopped > 0 {
		end = int(st.stopped / time.Second)
		if st.down {
			r.stopped = float64(end)
		}
	}
	mean := func(xs []int64, a, b int) float64 {
		var s int64
		for _, x := range xs[a:b] {
			s += x
		}
		return float64(s) / float64(b-a)
	}
	r.before = mean(st.good, from-5, from)
	r.during = mean(st.good, from, to)
	r.after = mean(st.good, end-10, end)
	if st.stopped > 0 && st.down {
		r.after = 0
	}
	r.loadAfter = mean(st.attempts, end-10, end)
	switch {
	case r.before < 0.95*rate:
		r.outcome = outcomeNever
	case r.after >= 0.95*rate:
		r.outcome = outcomeRecovers
	default:
		r.outcome = outcomeDown
	}
	for s := end - 1; s >= to && float64(st.good[s]) >= 0.95*rate; s-- {
		r.recovery = float64(s - to)
	}
	if st.served > 0 {
		r.wastedPct = 100 * float64(st.wasted) / float64(st.served)
	}
	return r
}

// metastableClaims judges Huang et al.'s four outcomes, one claim each.
func metastableClaims(p *metastableParams, rows []msRow) []Claim {
	var claims []Claim
	for _, r := range rows {
		if r.published == "" {
			continue
		}
		load := "full load"
		if r.msCase.load != 1 {
			load = fmt.Sprintf("%g%% lower load", round(100*(1-r.msCase.load), 1))
		}
		measured := r.outcome + ": goodput %.0f/s over the last 10 s (%.0f/s before the trigger), queue peak %.0f, %.1f%% of the work for callers gone"
		args := []float64{r.after, r.before, float64(r.peak), r.wastedPct}
		if r.stopped >= 0 {
			measured += "; stopped at %.0f s, provably down (queue and work up to the stop)"
			args = append(args, r.stopped)
		}
		claims = append(claims, newClaim(huangMetastable,
			fmt.Sprintf("the server's CPU cut by %g%% for %v at %s, callers resending at once after a %v timeout: the system %s",
				round(100*r.cut, 1), r.length, load, p.Timeout, r.published),
			r.outcome == r.published, measured, args...))
	}
	return claims
}
