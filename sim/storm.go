package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/unherd/unherd/retry"
)

const (
	sreCascading = `Google SRE book, ch. 22 "Addressing Cascading Failures", https://sre.google/sre-book/addressing-cascading-failures/`
	sreOverload  = `Google SRE book, ch. 21 "Handling Overload", https://sre.google/sre-book/handling-overload/`
	awsRetry     = `AWS SDKs and Tools Reference Guide, "Retry behavior" (standard mode), https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html`
)

// stormParams are the parameters of the storm scenario.
type stormParams struct {
	// Rate is the open stream's calls per second (--rate).
	Rate float64 `param:"rate" usage:"open stream: calls arriving per second" check:"positive,max=100000"`
	// Clients and Think are the closed population's size and mean think
	// time (--clients, --think).
	Clients int           `param:"clients" usage:"closed population: number of clients" check:"positive,max=1000000"`
	Think   time.Duration `param:"think" usage:"closed population: mean think time between calls" check:"positive"`
	// Attempts lists the attempt limits swept without a budget
	// (--attempts); the budgeted rows use the largest.
	Attempts []int `param:"attempts" usage:"comma-separated attempt limits to sweep" check:"positive,max=100"`
	// Ratio is the ratio budget's share (--ratio).
	Ratio float64 `param:"ratio" usage:"ratio budget: share of requests that may be retried" check:"positive,fraction"`
	// Duration is the length of each run (--duration); load is measured
	// over its second half, when the budgets' windows are full.
	Duration time.Duration `param:"duration" usage:"length of each run" check:"positive"`
	// Hop is the mean one-way network delay (--hop).
	Hop time.Duration `param:"hop" usage:"mean one-way network delay" check:"positive"`
}

func defaultStormParams() *stormParams {
	return &stormParams{Rate: 100, Clients: 100, Think: time.Second, Attempts: []int{1, 2, 3, 4, 5},
		Ratio: 0.1, Duration: 60 * time.Second, Hop: 10 * time.Millisecond}
}

// Fields implements Params: the fields tagged param, in their order.
func (p *stormParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags (checkFields),
// then the rules between fields.
func (p *stormParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
	}
	switch {
	case p.Duration < 2*time.Second:
		return invalid("duration", "%v is under 2s", p.Duration)
	case p.Duration > time.Hour:
		return invalid("duration", "%v is over an hour", p.Duration)
	}
	return nil
}

// Quick implements Params: the runs are already small; it shortens them to
// 40 s.
func (p *stormParams) Quick() { p.Duration = 40 * time.Second }

func (p *stormParams) model(closed bool) *callModel {
	return &callModel{closed: closed, clients: p.Clients, think: p.Think, rate: p.Rate,
		hop: p.Hop, hopSD: p.Hop / 5, downFrom: 0, downTo: p.Duration, end: p.Duration,
		bucket: 100 * time.Millisecond}
}

// policies: the attempt sweep without a budget, then the largest attempt
// limit with a ratio budget and with a token bucket. Every policy uses the
// default schedule (full jitter, 50 ms base).
func (p *stormParams) policies() []policySpec {
	var specs []policySpec
	for _, a := range p.Attempts {
		specs = append(specs, spec(fmt.Sprintf("%d attempts", a), retry.Config{MaxAttempts: a}, budgetNone))
	}
	top := slices.Max(p.Attempts)
	ratio := spec(fmt.Sprintf("%d attempts + ratio %g", top, p.Ratio), retry.Config{MaxAttempts: top}, budgetRatio)
	ratio.BudgetRatio, ratio.noFloor = p.Ratio, true
	return append(specs, ratio,
		spec(fmt.Sprintf("%d attempts + token bucket", top), retry.Config{MaxAttempts: top}, budgetToken))
}

var stormScenario = define("storm", "closed and open",
	"100 calls/s against a failing backend: each retry adds the whole stream again, a 10% ratio budget holds the load near 110/s and a token bucket near 100/s once empty (Google SRE book, ch. 21-22)",
	defaultStormParams, runStormScenario)

// stormRow is what one (population, policy) run measured.
type stormRow struct {
	population string
	policy     string
	spec       int // the policy's index in the specs run
	attempts   int
	budget     string
	load       float64 // attempts per second over the second half
	early      float64 // attempts per second over the first second
	peak       float64 // highest attempts per second in a 100 ms bucket
	amp        float64 // attempts per call
	success    float64
}

func runStormScenario(ctx context.Context, p *stormParams, o Options) (*Result, error) {
	res, _, err := runStorm(ctx, p, p.policies(), o, nil)
	return res, err
}

// runStorm runs every policy against both populations, or the runs keep
// keeps (see sweepCalls); it returns the rows too, for what-if. The
// claims need every run.
func runStorm(ctx context.Context, p *stormParams, specs []policySpec, o Options, keep func(closed bool, spec int) bool) (*Result, []stormRow, error) {
	pops := []bool{false, true}
	outs, err := sweepCalls(ctx, o, pops, specs, p.model, keep)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Scenario: "storm", Population: "closed and open", Params: paramValues(p),
		Columns: []string{"population", "policy", "attempts", "budget", "load_rps", "first_s_rps", "amplification", "success_pct"}}
	var rows []stormRow
	half := int(p.Duration/(100*time.Millisecond)) / 2
	for i, st := range outs {
		if st == nil {
			continue
		}
		spec := specs[i%len(specs)]
		r := stormRow{population: populationOpen, policy: spec.Name, spec: i % len(specs), attempts: spec.Retry.MaxAttempts, budget: spec.Budget}
		if pops[i/len(specs)] {
			r.population = populationClosed
		}
		var late, early int64
		for b, n := range st.load {
			if b >= half && b < 2*half {
				late += n
			}
			if b < 10 {
				early += n
			}
			r.peak = max(r.peak, float64(10*n))
		}
		r.load = float64(late) / (float64(half) / 10)
		r.early = float64(early)
		if st.calls > 0 {
			r.amp = float64(st.attempts) / float64(st.calls)
			r.success = float64(st.succeeded) / float64(st.calls)
		}
		rows = append(rows, r)
		res.Rows = append(res.Rows, Row{"population": r.population, "policy": r.policy,
			"attempts": r.attempts, "budget": r.budget, "load_rps": round(r.load, 1),
			"first_s_rps": round(r.early, 1), "amplification": round(r.amp, 2),
			"success_pct": round(100*r.success, 2)})
	}
	chart := Chart{Name: "storm_load", Title: "Load on a failing backend by attempt limit",
		XLabel: "attempts per call", YLabel: "attempts per second"}
	// A line per population without a budget, then each budget's rows,
	// the scenario's point: with a budget, more attempts add no load.
	for _, budgeted := range []bool{false, true} {
		for _, pop := range []string{"open", "closed"} {
			byBudget := map[string]*Series{}
			var order []string
			for _, r := range rows {
				if r.population != pop || (r.budget != budgetNone) != budgeted {
					continue
				}
				s, ok := byBudget[r.budget]
				if !ok {
					name := pop
					if budgeted {
						name = r.policy + " (" + pop + ")"
					}
					s = &Series{Name: name}
					byBudget[r.budget], order = s, append(order, r.budget)
				}
				s.X = append(s.X, float64(r.attempts))
				s.Y = append(s.Y, round(r.load, 1))
			}
			for _, b := range order {
				chart.Series = append(chart.Series, *byBudget[b])
			}
		}
	}
	res.Charts = []Chart{chart}
	if keep == nil {
		res.Claims = stormClaims(p, rows, len(specs))
	}
	return res, rows, nil
}

// stormClaims checks rows laid out as open policies then closed policies,
// each in p.policies() order.
func stormClaims(p *stormParams, rows []stormRow, n int) []Claim {
	na := len(p.Attempts)
	if n != na+2 {
		return nil
	}
	open, closed := rows[:n], rows[n:]
	var claims []Claim
	if i := slices.Index(p.Attempts, 2); i >= 0 {
		claims = append(claims, newClaim(sreCascading,
			fmt.Sprintf("one retry doubles the load on a failing backend: %.0f/s becomes %.0f/s", p.Rate, 2*p.Rate),
			within(open[i].load, 2*p.Rate, 0.05), "open stream, 2 attempts: %.1f/s", open[i].load))
	}
	growing := true
	var loads []string
	var loadFigs []float64
	for i := range na {
		loads = append(loads, fmt.Sprintf("%d: %%.0f/s", open[i].attempts))
		loadFigs = append(loadFigs, open[i].load)
		if i > 0 && (open[i].attempts > open[i-1].attempts) != (open[i].load > open[i-1].load) {
			growing = false
		}
	}
	top := slices.Max(p.Attempts)
	claims = append(claims,
		newClaim(sreCascading, "the load grows with every attempt allowed: attempts times the stream",
			growing && within(open[slices.Index(p.Attempts, top)].load, float64(top)*p.Rate, 0.05),
			"open stream by attempts, ["+strings.Join(loads, " ")+"]", loadFigs...),
		newClaim(sreOverload, fmt.Sprintf("a %g%% ratio budget holds the load near %.0f/s", 100*p.Ratio, (1+p.Ratio)*p.Rate),
			within(open[na].load, (1+p.Ratio)*p.Rate, 0.05),
			fmt.Sprintf("open stream, %d attempts with the ratio budget: ", top)+"%.1f/s", open[na].load),
		newClaim(awsRetry, fmt.Sprintf("a token bucket stops retries once it is empty: the load falls to the stream's %.0f/s", p.Rate),
			within(open[na+1].load, p.Rate, 0.03),
			fmt.Sprintf("open stream, %d attempts with the token bucket: ", top)+"%.1f/s (first second %.0f/s)", open[na+1].load, open[na+1].early),
	)
	if i1 := slices.Index(p.Attempts, 1); i1 >= 0 && top > 1 {
		it := slices.Index(p.Attempts, top)
		grow := closed[it].load / closed[i1].load
		claims = append(claims, newClaim(brookerBackoffFor,
			"a closed population limits itself: its load grows less than the attempts allowed, because retrying clients wait",
			grow < 0.9*float64(top),
			fmt.Sprintf("closed, %d attempts vs 1: ", top)+"load x%.2f (open stream x%.2f)", grow, open[it].load/open[i1].load))
	}
	return claims
}

// within reports whether v is within frac of want.
func within(v, want, frac float64) bool {
	return v >= want*(1-frac) && v <= want*(1+frac)
}
