package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// defaultPolicy is the policy a zero retry.Config builds: 3 attempts,
// full jitter from 50 ms capped at 20 s, and the AWS standard-mode token
// bucket.
func defaultPolicy() Policy {
	return Policy{Name: "unherd default", Budget: budgetToken}
}

// whatIfColumns are the columns of both what-if tables.
var whatIfColumns = []string{"population", "policy", "peak_rps", "amplification"}

// WhatIfReport is a what-if analysis: a user's retry policy judged beside
// unherd's default in the outage scenario, for a closed population and an
// open stream, with the outage and storm tables behind the comparisons.
type WhatIfReport struct {
	// Policy and Default are the two policies' fields as they ran
	// (Policy.Fields): defaults resolved, durations as strings.
	Policy  map[string]any `json:"policy"`
	Default map[string]any `json:"default"`
	// Warnings name settings that make no sense (a base of hours, a cap
	// longer than the run): the comparisons still stand, but say little.
	Warnings []string `json:"warnings,omitempty"`
	// Capacity is the dependency's capacity in requests per second, and
	// Outage how long it is down.
	Capacity float64 `json:"capacity_rps"`
	Outage   string  `json:"outage"`
	// Comparisons has one comparison per population: closed, then
	// open. (Its JSON name is "verdicts".)
	Comparisons []Comparison `json:"verdicts"`
	// Overall is "worse" if the policy is worse for either population (a
	// policy ships to both kinds of callers, and harm to the dependency
	// from one is harm), else "better" if better for either, else
	// "similar".
	Overall string `json:"overall"`
	// Results are the outage table, then the storm table. Their params
	// are the scenarios' own parameters only; the policies judged are
	// Policy and Default above, never mixed into params.
	Results []*Result `json:"results"`
	// Margins are the two policies' margins against a metastable
	// failure, the user's policy first, then the default: each one's
	// smallest trigger, of the metastable scenario's published map, that
	// leaves its server (without a limiter) down when its callers call
	// through the policy. If the map's largest trigger leaves it up, no
	// smaller one is run; else the triggers run in order of their work
	// (Trigger.Work) until one leaves it down.
	Margins []Margin `json:"margins"`
}

// Margin is a policy's margin against a metastable failure: the
// smallest trigger, of a tipping-point map's cuts to the server's CPU and
// their lengths, that leaves the server down when its callers call
// through the policy.
type Margin struct {
	// Policy names the policy, as the tables do.
	Policy string `json:"policy"`
	// TipsAt is the smallest trigger that leaves the server down (least
	// Trigger.Work); nil if the server recovers from every trigger of the
	// map.
	TipsAt *Trigger `json:"tips_at"`
	// Largest is the map's largest trigger: its largest cut for its
	// longest length.
	Largest Trigger `json:"largest"`
	// Unhealthy is the number of the map's runs that were not healthy
	// even before their trigger (TippingPolicy.Unhealthy).
	Unhealthy int `json:"unhealthy,omitempty"`
	// Summary says the margin in one line.
	Summary string `json:"summary"`
}

// Comparison judges the user's policy against the default for one
// population.
type Comparison struct {
	// Population is "closed" or "open".
	Population string `json:"population"`
	// Yours and Default are what each policy did to the dependency and
	// its callers.
	Yours   Impact `json:"yours"`
	Default Impact `json:"default"`
	// Judgement is "worse", "better" or "similar", from what the callers
	// got and what the dependency paid, never from a share of calls,
	// whose number depends on the policy (a closed population's clients
	// refused fast make more calls, and fail more of them, than clients
	// held in long waits, while getting as much done). A policy is worse
	// if it sends a failing dependency markedly more load than the
	// default (more than 1.25 times its mean during the outage, or its
	// peak), delays the dependency's recovery by more than 2 s, gets the
	// callers less goodput (2 points of the fault-free rate) or wastes
	// more of the dependency's work on callers who had gone (2 points),
	// whatever else it buys with that; better if it is not worse and gets
	// more goodput, wastes less work or recovers sooner. Less load alone
	// is not better: a closed population's clients held in their waits
	// make fewer calls without getting more done.
	Judgement string `json:"judgement"`
	// Summary is the comparison in one line, with its figures.
	Summary string `json:"summary"`
}

// Impact is what one policy did in the outage scenario.
type Impact struct {
	// MeanX and PeakX are the mean offered load during the outage and the
	// highest load in any 100 ms, as multiples of the capacity.
	MeanX float64 `json:"mean_x_capacity"`
	PeakX float64 `json:"peak_x_capacity"`
	// Amplification is the attempts sent while the dependency was down
	// over the calls that began in that time. The attempts include the
	// retries of calls begun before the outage, so for a closed
	// population whose callers spend the outage retrying it can exceed
	// the policy's attempt cap; it is not attempts per call.
	Amplification float64 `json:"amplification"`
	// RecoverS is the seconds after the dependency's return until
	// goodput is back to 95% of its healthy level; -1 if not within the
	// run.
	RecoverS float64 `json:"recover_s"`
	// GoodputPct is the successful calls per second from the outage's
	// start to the run's end, in percent of the fault-free rate: the same
	// run's successful calls per second before the outage, when nothing
	// failed. The outage itself gives nothing, so a policy that recovers
	// at once gets the share of that time after the outage.
	GoodputPct float64 `json:"goodput_pct"`
	// WastedPct is the share of the dependency's work, in percent, done
	// for callers who had gone (their attempt timed out, or their call
	// ended). The outage's callers wait for every answer, and the
	// dependency answers each at once, so it is 0 there.
	WastedPct float64 `json:"wasted_pct"`
}

// WhatIf judges a user's retry policy beside unherd's default (3 attempts,
// full jitter from 50 ms capped at 20 s, a token-bucket budget): it runs
// both through the outage scenario at its published size (1000 clients
// and an open stream of 10000 calls/s against a dependency of 20000/s
// that is down for 30 s) and through the storm scenario, and returns a
// Comparison per population with the tables; then it maps each one's margin
// against a metastable failure (Margins): the smallest cut to the
// metastable scenario's server that its open stream of callers,
// calling through the policy with the scenario's 3 s timeout, does not
// recover from. A policy Policy.Validate refuses, or
// ValidateFor(UseWhatIf), is an error (a *ParamError): the simulated
// dependency fails fast, for one, so a per-attempt timeout is refused
// rather than ignored.
func WhatIf(ctx context.Context, p Policy, o Options) (*WhatIfReport, error) {
	return whatIf(ctx, p, o, defaultOutageParams(), defaultStormParams(), defaultMetastableParams())
}

// The populations of a what-if, as Comparison.Population names them.
const (
	populationClosed = "closed"
	populationOpen   = "open"
)

// WhatIfPart is what one policy's runs against one population measured in
// a what-if: the outage run and the storm run. A what-if is four such
// parts (the user's policy and the default, each against the closed
// population and the open stream), independent of each other, so that
// processes can make them at once and the default's can be kept for
// another policy with the same seed (the browser's Web Workers do both);
// MergeWhatIf joins them into the report WhatIf makes.
type WhatIfPart struct {
	// Population is "closed" or "open"; Default is set for the default
	// policy's part, clear for the user's.
	Population string `json:"population"`
	Default    bool   `json:"default"`
	// Impact is what the policy did in the outage, as a Comparison shows it.
	Impact Impact `json:"impact"`
	// Outage and Storm are the part's rows of the what-if's outage and
	// storm tables, and Load its line on its population's outage chart.
	Outage Row    `json:"outage"`
	Storm  Row    `json:"storm"`
	Load   Series `json:"load"`
	// Margin is the policy's margin against a metastable failure, made
	// with the open stream's part (the metastable server's callers are an
	// open stream); nil in the closed population's part.
	Margin *Margin `json:"margin,omitempty"`
}

// WhatIfRun makes one part of the what-if of p: the default policy's
// runs against the population named (closed or open) if ofDefault is
// set (p is then only validated), else p's. Made with the same options,
// the four parts MergeWhatIf needs give the report WhatIf gives.
func WhatIfRun(ctx context.Context, p Policy, o Options, population string, ofDefault bool) (*WhatIfPart, error) {
	if population != populationClosed && population != populationOpen {
		return nil, fmt.Errorf("%w: population %q: want %q or %q", ErrInvalidParams, population, populationClosed, populationOpen)
	}
	parts, err := whatIfParts(ctx, p, o, defaultOutageParams(), defaultStormParams(), defaultMetastableParams(), func(closed bool, spec int) bool {
		return closed == (population == populationClosed) && (spec == 1) == ofDefault
	})
	if err != nil {
		return nil, err
	}
	return parts[0], nil
}

// MergeWhatIf joins the four parts of the what-if of p (each made by
// WhatIfRun with the same options, in any order) into the report WhatIf
// makes. The parts are not changed.
func MergeWhatIf(p Policy, parts []*WhatIfPart) (*WhatIfReport, error) {
	return mergeWhatIf(p, defaultOutageParams(), defaultStormParams(), parts)
}

// whatIf is WhatIf at the given sizes.
func whatIf(ctx context.Context, p Policy, o Options, op *outageParams, sp *stormParams, mp *metastableParams) (*WhatIfReport, error) {
	parts, err := whatIfParts(ctx, p, o, op, sp, mp, nil)
	if err != nil {
		return nil, err
	}
	return mergeWhatIf(p, op, sp, parts)
}

// whatIfParts makes the parts of the what-if of p that keeps keeps (every
// part if keep is nil; see sweepCalls), at the given sizes. The outage
// runs are the first third of the progress, the storm runs the second,
// the margins the last, so that it never goes back between them.
func whatIfParts(ctx context.Context, p Policy, o Options, op *outageParams, sp *stormParams, mp *metastableParams, keep func(closed bool, spec int) bool) ([]*WhatIfPart, error) {
	user, err := specOf(p, UseWhatIf)
	if err != nil {
		return nil, err
	}
	specs := []policySpec{user, {Policy: defaultPolicy()}}
	oo, so, mo := o, o, o
	if o.Progress != nil {
		third := func(k int) func(d, t int) {
			return func(d, t int) {
				if t > 0 {
					o.Progress(100*k+100*d/t, 300)
				}
			}
		}
		oo.Progress, so.Progress, mo.Progress = third(0), third(1), third(2)
	}
	_, orows, err := runOutage(ctx, op, specs, oo, keep)
	if err != nil {
		return nil, err
	}
	_, srows, err := runStorm(ctx, sp, specs, so, keep)
	if err != nil {
		return nil, err
	}
	var parts []*WhatIfPart
	for _, r := range orows {
		part := &WhatIfPart{Population: r.population, Default: r.spec == 1, Impact: impact(r, op), Load: r.series(),
			Outage: Row{"population": r.population, "policy": r.policy,
				"peak_rps": round(r.peak, 0), "amplification": round(r.amp, 2),
				"outage_rps": round(r.during, 0), "goodput_pct": round(100*r.goodput, 1),
				"wasted_pct": 0.0, "recover_s": round(r.recover, 1)}}
		for _, s := range srows {
			if s.population == r.population && s.spec == r.spec {
				part.Storm = Row{"population": s.population, "policy": s.policy,
					"peak_rps": round(s.peak, 0), "amplification": round(s.amp, 2),
					"load_rps": round(s.load, 1)}
			}
		}
		parts = append(parts, part)
	}
	var open []*WhatIfPart
	for _, part := range parts {
		if part.Population == populationOpen {
			open = append(open, part)
		}
	}
	for k, part := range open {
		spec := specs[b2i(part.Default)]
		po := mo
		if mo.Progress != nil {
			po.Progress = func(d, t int) {
				if t > 0 {
					mo.Progress(k*t+d, len(open)*t)
				}
			}
		}
		tip, runs, unhealthy, err := smallestTip(ctx, mp, tipPolicy{name: spec.Name, build: spec.build}, po)
		if err != nil {
			return nil, err
		}
		part.Margin = marginOf(mp, spec.Name, tip, runs, unhealthy)
	}
	return parts, nil
}

// marginOf is the Margin of the policy called name on p's map, whose
// smallest trigger that leaves the server down is tip (nil if none),
// found in runs runs of which unhealthy were not healthy.
func marginOf(p *metastableParams, name string, tip *Trigger, runs, unhealthy int) *Margin {
	largest := Trigger{Cut: float64(slices.Max(p.MapCuts)) / 100, Length: time.Duration(slices.Max(p.MapLengths)) * time.Second}
	mg := &Margin{Policy: name, TipsAt: tip, Largest: largest, Unhealthy: unhealthy}
	if tip == nil {
		mg.Summary = fmt.Sprintf("the server recovers from every trigger mapped, up to %v", largest)
	} else {
		mg.Summary = fmt.Sprintf("a cut of %v to the server's CPU leaves it down for good (the smallest trigger mapped that does)", tip)
	}
	if unhealthy > 0 {
		mg.Summary += fmt.Sprintf("; %d of its %d runs turned away load before any trigger", unhealthy, runs)
	}
	return mg
}

// mergeWhatIf is MergeWhatIf at the given sizes.
func mergeWhatIf(p Policy, op *outageParams, sp *stormParams, parts []*WhatIfPart) (*WhatIfReport, error) {
	// of[closed][default] is a part; the tables list the user's policy
	// before the default, the outage the closed population first and the
	// storm the open one.
	var of [2][2]*WhatIfPart
	for _, part := range parts {
		if part == nil || (part.Population != populationClosed && part.Population != populationOpen) {
			return nil, fmt.Errorf("%w: MergeWhatIf: a part of population %v: WhatIfRun makes the parts", ErrInvalidParams, part)
		}
		c, d := part.Population == populationOpen, part.Default
		if of[b2i(c)][b2i(d)] != nil {
			return nil, fmt.Errorf("%w: MergeWhatIf: two parts of the %s population's %s", ErrInvalidParams, part.Population, map[bool]string{true: "default", false: "policy"}[d])
		}
		of[b2i(c)][b2i(d)] = part
	}
	for c := range of {
		for d := range of[c] {
			if of[c][d] == nil {
				return nil, fmt.Errorf("%w: MergeWhatIf: %d parts: want the four of one what-if (both policies, both populations)", ErrInvalidParams, len(parts))
			}
		}
	}
	rep := &WhatIfReport{Policy: p.Fields(), Default: defaultPolicy().Fields(), Warnings: policyWarnings(p, op),
		Capacity: op.Capacity, Outage: op.Down.String()}
	outage := &Result{Scenario: "outage", Population: "closed and open", Params: paramValues(op),
		Columns: append(append([]string(nil), whatIfColumns...), "outage_rps", "goodput_pct", "wasted_pct", "recover_s"),
		Charts:  outageCharts(op)}
	storm := &Result{Scenario: "storm", Population: "closed and open", Params: paramValues(sp),
		Columns: append(append([]string(nil), whatIfColumns...), "load_rps")}
	for c, pop := range []string{populationClosed, populationOpen} {
		yours, def := of[c][0], of[c][1]
		outage.Rows = append(outage.Rows, yours.Outage, def.Outage)
		outage.Charts[c].Series = []Series{yours.Load, def.Load}
		rep.Comparisons = append(rep.Comparisons, judge(pop, yours.Impact, def.Impact))
	}
	for c := range []string{populationOpen, populationClosed} {
		storm.Rows = append(storm.Rows, of[1-c][0].Storm, of[1-c][1].Storm)
	}
	rep.Overall = overallJudgement(rep.Comparisons)
	rep.Results = []*Result{outage, storm}
	for _, part := range []*WhatIfPart{of[1][0], of[1][1]} {
		if part.Margin == nil {
			return nil, fmt.Errorf("%w: MergeWhatIf: the open stream's part of the %s has no margin: WhatIfRun makes the parts", ErrInvalidParams, part.Outage["policy"])
		}
		rep.Margins = append(rep.Margins, *part.Margin)
	}
	return rep, nil
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// overallJudgement is WhatIfReport.Overall for the comparisons cs.
func overallJudgement(cs []Comparison) string {
	overall := "similar"
	for _, j := range []string{"better", "worse"} {
		for _, v := range cs {
			if v.Judgement == j {
				overall = j
			}
		}
	}
	return overall
}

func impact(r outageRow, p *outageParams) Impact {
	return Impact{MeanX: round(r.during/p.Capacity, 2), PeakX: round(r.peak/p.Capacity, 2),
		Amplification: round(r.amp, 2), RecoverS: round(r.recover, 1), GoodputPct: round(100*r.goodput, 1)}
}

// judge compares the user's impact with the default's; see Comparison.
func judge(pop string, y, d Impact) Comparison {
	v := Comparison{Population: pop, Yours: y, Default: d}
	// never counts "not recovered within the run" as later than any time.
	rec := func(s float64) float64 {
		if s < 0 {
			return 1e9
		}
		return s
	}
	moreLoad := y.MeanX > 1.25*d.MeanX+0.01 || y.PeakX > 1.25*d.PeakX+0.01
	later := rec(y.RecoverS) > rec(d.RecoverS)+2
	sooner := rec(y.RecoverS) < rec(d.RecoverS)-2
	lessGood, moreGood := y.GoodputPct < d.GoodputPct-2, y.GoodputPct > d.GoodputPct+2
	moreWaste, lessWaste := y.WastedPct > d.WastedPct+2, y.WastedPct < d.WastedPct-2

	goodput := fmt.Sprintf("goodput %.1f%% of the fault-free rate (default %.1f%%)", y.GoodputPct, d.GoodputPct)
	load := fmt.Sprintf("%.2fx the capacity during the outage (default %.2fx)", y.MeanX, d.MeanX)
	var why []string
	if moreLoad {
		why = append(why, fmt.Sprintf("sends %.2fx the dependency's capacity during the outage (peak %.2fx), where the default sends %.2fx (peak %.2fx)",
			y.MeanX, y.PeakX, d.MeanX, d.PeakX))
	}
	if later {
		why = append(why, "delays its recovery "+recovery(y.RecoverS, d.RecoverS))
	}
	if lessGood {
		why = append(why, "gets its callers less: "+goodput)
	}
	if moreWaste {
		why = append(why, fmt.Sprintf("wastes %.1f%% of the dependency's work on callers who had gone (default %.1f%%)", y.WastedPct, d.WastedPct))
	}
	switch {
	case moreLoad || later || lessGood || moreWaste:
		v.Judgement = "worse"
		if !lessGood {
			why = append(why, goodput)
		}
	case moreGood || lessWaste || sooner:
		v.Judgement = "better"
		why = append(why, goodput+" for "+load)
		if y.WastedPct != 0 || d.WastedPct != 0 {
			why = append(why, fmt.Sprintf("%.1f%% of the work wasted on callers who had gone (default %.1f%%)", y.WastedPct, d.WastedPct))
		}
		why = append(why, "recovers "+when(y.RecoverS, d.RecoverS))
	default:
		v.Judgement = "similar"
		why = append(why, goodput+", "+load)
	}
	v.Summary = fmt.Sprintf("%s than the default: %s", v.Judgement, strings.Join(why, "; "))
	if v.Judgement == "similar" {
		v.Summary = "similar to the default: " + strings.Join(why, "; ")
	}
	return v
}

// recovery describes how much later recovery time y comes than d
// (seconds; -1 for never).
func recovery(y, d float64) string {
	if y >= 0 && d >= 0 {
		return fmt.Sprintf("by %.1f s (%s)", y-d, when(y, d))
	}
	return "(" + when(y, d) + ")"
}

// when says recovery times y and d.
func when(y, d float64) string {
	say := func(s float64) string {
		if s < 0 {
			return "not within the run"
		}
		return fmt.Sprintf("%.1f s after the return", s)
	}
	return fmt.Sprintf("%s, default %s", say(y), say(d))
}

// policyWarnings names settings of p that make no sense in the outage
// scenario p runs in.
func policyWarnings(p Policy, op *outageParams) []string {
	var w []string
	b := p.Retry.Backoff
	base, cap := b.Temp(0, false), b.Temp(1<<20, false)
	run := op.Before + op.Down + op.After
	if !b.Immediate && base >= time.Minute {
		w = append(w, fmt.Sprintf("base %v: the first retry waits up to %v, so within the %v simulated hardly any retry happens and the policy amounts to no retries at all; a base is a few milliseconds (did you mean ms?)",
			base, base, run))
	}
	if cap > time.Hour {
		w = append(w, fmt.Sprintf("cap %v: a caller waiting more than an hour between attempts has long given up; caps are seconds", cap))
	}
	if n := p.Fields()["attempts"].(int); n > 10 {
		w = append(w, fmt.Sprintf("%d attempts: every attempt beyond a few multiplies the load on a failing dependency", n))
	}
	return w
}
