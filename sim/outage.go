package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
)

const (
	brookerBackoffFor = `Brooker, "What is Backoff For?", 2022, https://brooker.co.za/blog/2022/08/11/backoff.html`
	fowlerBreaker     = `Nygard, "Release It!", 2007, the Circuit Breaker pattern; Fowler, "CircuitBreaker", 2014, https://martinfowler.com/bliki/CircuitBreaker.html`
	unherdDesign      = `unherd's design (a refused retry must not turn into more load), after Brooker, "What is Backoff For?", 2022, https://brooker.co.za/blog/2022/08/11/backoff.html`
	builders          = `Brooker, "Timeouts, retries, and backoff with jitter", Amazon Builders' Library, 2019, https://aws.amazon.com/builders-library/timeouts-retries-and-backoff-with-jitter/`
)

// outageParams are the parameters of the outage scenario.
type outageParams struct {
	// Clients is the closed population's size (--clients).
	Clients int `param:"clients" usage:"closed population: number of clients" check:"positive,max=1000000"`
	// Think is a closed client's mean pause between calls (--think).
	Think time.Duration `param:"think" usage:"closed population: mean think time between calls" check:"positive"`
	// Rate is the open stream's arrivals per second (--rate).
	Rate float64 `param:"rate" usage:"open stream: calls arriving per second" check:"positive,max=1000000"`
	// Capacity is the requests per second the dependency serves when up;
	// it sheds the rest (--capacity).
	Capacity float64 `param:"capacity" usage:"requests per second the dependency serves when up" check:"positive"`
	// Before, Down and After are the healthy time before the outage, the
	// outage, and the time observed after it (--before, --down, --after).
	Before time.Duration `param:"before" usage:"healthy time before the outage" check:"positive"`
	Down   time.Duration `param:"down" usage:"length of the outage" check:"positive"`
	After  time.Duration `param:"after" usage:"time observed after the outage" check:"positive"`
	// Attempts, Base and Cap shape the retry policies compared
	// (--attempts, --base, --cap); the fixed policy waits FixedDelay
	// (--fixed).
	Attempts   int           `param:"attempts" usage:"attempts per call, counting the first" check:"positive"`
	Base       time.Duration `param:"base" usage:"backoff base" check:"positive"`
	Cap        time.Duration `param:"cap" usage:"backoff cap" check:"positive"`
	FixedDelay time.Duration `param:"fixed" usage:"delay of the fixed policy" check:"positive"`
	// Hop is the mean one-way network delay (--hop).
	Hop time.Duration `param:"hop" usage:"mean one-way network delay" check:"positive"`
}

func defaultOutageParams() *outageParams {
	return &outageParams{Clients: 1000, Think: 50 * time.Millisecond, Rate: 10000, Capacity: 20000,
		Before: 10 * time.Second, Down: 30 * time.Second, After: 60 * time.Second,
		Attempts: 8, Base: 100 * time.Millisecond, Cap: 10 * time.Second, FixedDelay: time.Second,
		Hop: 10 * time.Millisecond}
}

// Fields implements Params: the fields tagged param, in their order.
func (p *outageParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags (checkFields),
// then the rules between fields.
func (p *outageParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
	}
	switch {
	case p.Base > p.Cap:
		return invalid("base", "%v is above --cap %v", p.Base, p.Cap)
	case p.Before < time.Second:
		return invalid("before", "%v is under 1s: the baseline needs a second of healthy load", p.Before)
	case p.Before+p.Down+p.After > time.Hour:
		return invalid("after", "--before, --down and --after add up to more than an hour")
	}
	return nil
}

// Quick implements Params. It changes nothing: the report runs the
// published 1000 clients (and the open stream at their rate), observed
// for a minute after the outage, in a few seconds.
func (p *outageParams) Quick() {}

func (p *outageParams) model(closed bool) *callModel {
	return &callModel{closed: closed, clients: p.Clients, think: p.Think, rate: p.Rate,
		hop: p.Hop, hopSD: p.Hop / 5, capacity: p.Capacity,
		downFrom: p.Before, downTo: p.Before + p.Down, end: p.Before + p.Down + p.After,
		bucket: 100 * time.Millisecond}
}

// policies are the strategies compared, in table order.
func (p *outageParams) policies() []policySpec {
	exp := func(j backoff.Jitter) retry.Config {
		return retry.Config{MaxAttempts: p.Attempts, Backoff: exponential(p.Base, p.Cap, j)}
	}
	guarded := func(name, guard string) policySpec {
		s := spec(name, exp(backoff.Full), budgetNone)
		s.guard = guard
		return s
	}
	return []policySpec{
		spec("no backoff", retry.Config{MaxAttempts: p.Attempts, Backoff: immediate()}, budgetNone),
		spec("fixed "+p.FixedDelay.String(), retry.Config{MaxAttempts: p.Attempts, Backoff: fixed(p.FixedDelay)}, budgetNone),
		spec("exponential", exp(backoff.None), budgetNone),
		spec("full jitter", exp(backoff.Full), budgetNone),
		spec("full jitter + budget", exp(backoff.Full), budgetToken),
		guarded("full jitter + breaker", guardBreaker),
		guarded("full jitter + throttle", guardThrottle),
	}
}

var outageScenario = define("outage", "closed and open",
	"1000 clients and a dependency down for 30 s: offered load, peak, recovery and failed calls for no backoff, a fixed delay, exponential backoff without jitter, full jitter, and full jitter with a budget, a circuit breaker or client-side throttling, for a closed population and an open stream (Brooker 2019, 2022)",
	defaultOutageParams, runOutageScenario)

func runOutageScenario(ctx context.Context, p *outageParams, o Options) (*Result, error) {
	res, _, err := runOutage(ctx, p, p.policies(), o, nil)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// outageCharts are the outage table's charts without their lines: the
// closed population's, then the open stream's.
func outageCharts(p *outageParams) []Chart {
	charts := []Chart{
		{Name: "outage_closed", Title: "Offered load, closed population", XLabel: "time (s)", YLabel: "attempts per second, log scale", YScale: scaleLog},
		{Name: "outage_open", Title: "Offered load, open stream", XLabel: "time (s)", YLabel: "attempts per second, log scale", YScale: scaleLog},
	}
	down := Span{From: p.Before.Seconds(), To: (p.Before + p.Down).Seconds(), Label: "dependency down"}
	for i := range charts {
		charts[i].Shade = []Span{down}
	}
	return charts
}

// series is r's line on its population's chart: the offered load per
// 100 ms bucket.
func (r outageRow) series() Series {
	xs := make([]float64, len(r.load))
	for b := range xs {
		xs[b] = round(float64(b)*0.1, 1)
	}
	return Series{Name: r.policy, X: xs, Y: r.load}
}

// outageRow is what one (population, policy) run measured.
type outageRow struct {
	population string
	policy     string
	spec       int     // the policy's index in the specs run
	baseline   float64 // offered load before the outage, per second
	peak       float64 // highest offered load in a 100 ms bucket, per second
	during     float64 // mean offered load during the outage, per second
	pulse      float64 // peak over mean offered load during the outage
	amp        float64 // attempts per call during the outage
	recover    float64 // seconds after the return until goodput is back; -1 if never
	failed     int64
	success    float64 // share of ended calls that succeeded
	// goodput is the successful calls per second from the outage's start
	// to the run's end over those per second before the outage, when
	// nothing failed: the run's own fault-free rate.
	goodput float64
	load    []float64
}

// runOutage runs every policy against both populations, or the runs keep
// keeps (see sweepCalls), and builds the outage table; it returns the
// rows too, for what-if. The claims need every run.
func runOutage(ctx context.Context, p *outageParams, specs []policySpec, o Options, keep func(closed bool, spec int) bool) (*Result, []outageRow, error) {
	pops := []bool{true, false}
	outs, err := sweepCalls(ctx, o, pops, specs, p.model, keep)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Scenario: "outage", Population: "closed and open", Params: paramValues(p),
		Columns: []string{"population", "policy", "baseline_rps", "outage_rps", "peak_rps", "peak_x", "pulse",
			"amplification", "recover_s", "failed", "success_pct"}}
	var rows []outageRow
	charts := outageCharts(p)
	for i, st := range outs {
		if st == nil {
			continue
		}
		pop := populationClosed
		if !pops[i/len(specs)] {
			pop = populationOpen
		}
		r := measureOutage(p, pop, specs[i%len(specs)].Name, st)
		r.spec = i % len(specs)
		rows = append(rows, r)
		res.Rows = append(res.Rows, Row{"population": pop, "policy": r.policy,
			"baseline_rps": round(r.baseline, 0), "outage_rps": round(r.during, 0), "peak_rps": round(r.peak, 0), "peak_x": round(r.peak/r.baseline, 2),
			"pulse": round(r.pulse, 2), "amplification": round(r.amp, 2), "recover_s": round(r.recover, 1),
			"failed": r.failed, "success_pct": round(100*r.success, 2)})
		c := &charts[i/len(specs)]
		c.Series = append(c.Series, r.series())
	}
	res.Charts = charts
	if keep == nil {
		res.Claims = outageClaims(p, rows, len(specs))
	}
	return res, rows, nil
}

// measureOutage reduces a run's statistics to a row. Buckets are 100 ms.
func measureOutage(p *outageParams, pop, policy string, st *callStats) outageRow {
	const perSec = 10 // buckets per second
	b0 := int(time.Second / (100 * time.Millisecond))
	down, up := int(p.Before/(100*time.Millisecond)), int((p.Before+p.Down)/(100*time.Millisecond))
	n := int((p.Before + p.Down + p.After) / (100 * time.Millisecond))
	r := outageRow{population: pop, policy: policy, failed: st.calls - st.succeeded, recover: -1}
	var baseLoad, baseGood int64
	for b := b0; b < down; b++ {
		baseLoad += st.load[b]
		baseGood += st.good[b]
	}
	secs := float64(down-b0) / perSec
	r.baseline = float64(baseLoad) / secs
	goodPerSec := float64(baseGood) / secs
	r.load = make([]float64, n)
	// Pulses: the highest bucket over the mean, in the outage after its
	// first two seconds (every policy answers the onset with one wave of
	// first retries).
	var outLoad, settled int64
	from := min(down+2*perSec, up-1)
	for b := range n {
		r.load[b] = float64(st.load[b] * perSec)
		r.peak = max(r.peak, r.load[b])
		if b >= down && b < up {
			outLoad += st.load[b]
		}
		if b >= from && b < up {
			settled += st.load[b]
			r.pulse = max(r.pulse, float64(st.load[b]))
		}
	}
	r.during = float64(outLoad) / (float64(up-down) / perSec)
	if settled > 0 {
		r.pulse /= float64(settled) / float64(up-from)
	}
	if st.firstInOutage > 0 {
		r.amp = float64(st.attemptsInOutage) / float64(st.firstInOutage)
	}
	// Recovered: the first second after the return in which as many calls
	// succeed as in an average healthy second (95% of it).
	for b := up; b+perSec <= n; b++ {
		var g int64
		for k := b; k < b+perSec; k++ {
			g += st.good[k]
		}
		if float64(g) >= 0.95*goodPerSec {
			r.recover = float64(b-up) / perSec
			break
		}
	}
	if st.calls > 0 {
		r.success = float64(st.succeeded) / float64(st.calls)
	}
	var after int64
	for b := down; b < n; b++ {
		after += st.good[b]
	}
	if goodPerSec > 0 {
		r.goodput = float64(after) / (float64(n-down) / perSec) / goodPerSec
	}
	return r
}

// outageClaims checks the published claims against rows laid out as
// closed policies then open policies, each in p.policies() order. A
// mechanism's claim checks what it costs as well as what it saves: load,
// and the success rate and recovery time a user pays for it.
func outageClaims(p *outageParams, rows []outageRow, n int) []Claim {
	if n != 7 || len(rows) != 14 {
		return nil // a what-if table: its own claims
	}
	const none, fixd, exp, full, budg, brk, thr = 0, 1, 2, 3, 4, 5, 6
	c, op := rows[:n], rows[n:]
	// rec is the recovery time with "never" counted as the whole observed
	// time after the outage, so that a median over seeds stays meaningful.
	rec := func(r outageRow) float64 {
		if r.recover < 0 {
			return p.After.Seconds()
		}
		return r.recover
	}
	never := fmt.Sprintf(" (%.0f s would mean not within the run)", p.After.Seconds())
	// sched is the longest a call's retries can wait: the capped delays
	// of every retry added up, and so the longest a refused retry waits.
	var sched time.Duration
	for n := range p.Attempts - 1 {
		sched += exponential(p.Base, p.Cap, backoff.Full).Temp(n, false)
	}
	// costsLittle: success within 10 points of full jitter alone and
	// recovery at most 5 s later. A guard that rejects locally loses the
	// calls of the outage's last seconds that retries would have carried
	// past it, and a few seconds of probing after the return: at the
	// published sizes that is under 10 points. More is harm.
	costsLittle := func(r, base outageRow) bool {
		return r.success >= base.success-0.10 && rec(r) <= rec(base)+5
	}
	return []Claim{
		newClaim(brookerBackoffFor, "backoff protects a dependency from a closed population: full jitter offers far less load during the outage than no backoff",
			c[full].during < c[none].during/2,
			"closed: mean load during the outage %.0f/s with full jitter vs %.0f/s without backoff (%.0f/s before it)",
			c[full].during, c[none].during, c[none].baseline),
		newClaim(builders, "fixed or un-jittered delays turn an outage into pulses; jitter spreads them out",
			c[fixd].pulse > 2*c[full].pulse && c[exp].pulse > 2*c[full].pulse,
			"closed, peak over mean load in the outage after its first 2 s: fixed %.1f, exponential %.1f, full jitter %.1f",
			c[fixd].pulse, c[exp].pulse, c[full].pulse),
		newClaim(brookerBackoffFor, "an open stream is not protected by backoff: with full jitter it still offers about as many attempts per call as with no backoff",
			op[full].amp > 0.8*op[none].amp,
			"open: attempts per call during the outage %.2f with full jitter vs %.2f without backoff", op[full].amp, op[none].amp),
		newClaim(brookerBackoffFor, "a retry budget bounds an open stream's load where backoff cannot, at little cost in success or recovery",
			op[budg].amp < 1.2 && op[budg].amp < op[full].amp/2 && costsLittle(op[budg], op[full]),
			"open: attempts per call during the outage %.2f with a token-bucket budget vs %.2f without; peak %.0f/s vs %.0f/s; success %.1f%% vs %.1f%%; recovered %.1f s vs %.1f s after the return"+never,
			op[budg].amp, op[full].amp, op[budg].peak, op[full].peak, 100*op[budg].success, 100*op[full].success, rec(op[budg]), rec(op[full])),
		newClaim(unherdDesign, "a retry budget does not undo backoff for a closed population: a refused retry waits at the pace of the retries it had left instead of turning into more load, so load during the outage stays at most that of full jitter alone (within 1.5x), for a little success (at most 5 points: a refused call fails even where its retries would have outlasted the outage) and a recovery within the schedule's length",
			c[budg].during <= 1.5*c[full].during && c[budg].success >= c[full].success-0.05 && rec(c[budg]) <= sched.Seconds(),
			"closed: mean load during the outage %.0f/s with full jitter and a budget vs %.0f/s with full jitter alone (%.0f/s before it); success %.1f%% vs %.1f%%; recovered %.1f s vs %.1f s after the return (the schedule's delays add up to %.1f s)",
			c[budg].during, c[full].during, c[budg].baseline, 100*c[budg].success, 100*c[full].success, rec(c[budg]), rec(c[full]), sched.Seconds()),
		newClaim(fowlerBreaker, "a circuit breaker stops calling a dependency that is down (once open, only its probes get through), and lets traffic back soon after it returns, without costing calls that would have succeeded",
			op[brk].during < 0.05*op[brk].baseline && costsLittle(op[brk], op[full]),
			"open: mean load during the outage %.0f/s with a breaker vs %.0f/s without (%.0f/s before it); success %.1f%% vs %.1f%%; recovered %.1f s vs %.1f s after the return"+never,
			op[brk].during, op[full].during, op[brk].baseline, 100*op[brk].success, 100*op[full].success, rec(op[brk]), rec(op[full])),
		newClaim(sreOverload, "client-side adaptive throttling rejects requests locally, so a failing backend sees less load, and lets traffic back as the backend recovers, without costing calls that would have succeeded",
			op[thr].during < op[full].during/2 && costsLittle(op[thr], op[full]),
			"open: mean load during the outage %.0f/s with the throttle vs %.0f/s without; success %.1f%% vs %.1f%%; recovered %.1f s vs %.1f s after the return"+never,
			op[thr].during, op[full].during, 100*op[thr].success, 100*op[full].success, rec(op[thr]), rec(op[full])),
	}
}
