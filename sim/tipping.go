package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
)

// Trigger is a cut to the server's CPU: Cut of it (a share in (0, 1))
// for Length.
type Trigger struct {
	Cut    float64
	Length time.Duration
}

// Work is the CPU time the trigger takes away, in seconds of the whole
// server: Cut times Length. The smallest trigger of a set is the one of
// least work, the shorter of two equal ones.
func (t Trigger) Work() float64 { return t.Cut * t.Length.Seconds() }

// String returns "80% for 10s".
func (t Trigger) String() string { return fmt.Sprintf("%g%% for %v", round(100*t.Cut, 1), t.Length) }

// MarshalJSON writes {"cut": 0.8, "length": "10s", "work_s": 8}.
func (t Trigger) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Cut    float64 `json:"cut"`
		Length string  `json:"length"`
		Work   float64 `json:"work_s"`
	}{t.Cut, t.Length.String(), round(t.Work(), 3)})
}

// UnmarshalJSON reads what MarshalJSON writes; work_s is derived and
// not read.
func (t *Trigger) UnmarshalJSON(b []byte) error {
	var v struct {
		Cut    float64 `json:"cut"`
		Length string  `json:"length"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	d, err := time.ParseDuration(v.Length)
	if err != nil {
		return fmt.Errorf("sim: trigger length: %w", err)
	}
	t.Cut, t.Length = v.Cut, d
	return nil
}

// TippingMap is a tipping-point map: for each policy, the boundary
// between the triggers the system recovers from and those that leave it
// down.
type TippingMap struct {
	// Cuts and Lengths are the triggers mapped: each cut (a share of the
	// server's CPU) for each length, both ascending.
	Cuts    []float64
	Lengths []time.Duration
	// Policies are the policies mapped, in the order run.
	Policies []TippingPolicy
}

// TippingPolicy is one policy's boundary on a TippingMap.
type TippingPolicy struct {
	// Name names the policy: "resend", "unherd default", "default +
	// limiter", or a user's Policy.Name.
	Name string
	// Boundary holds, for each of the map's cuts, the shortest of its
	// lengths that leaves the system down; zero where none does.
	Boundary []time.Duration
	// Margin is the smallest trigger of the map that leaves the system
	// down (least Trigger.Work), or nil if none does.
	Margin *Trigger
	// Runs is the number of runs the boundary took.
	Runs int
	// Unhealthy is the number of those runs that were not healthy even
	// before their trigger (a goodput under 95% of the load: the policy
	// or the server's limiter turned away part of a load the server can
	// serve). They count as down: the scenario's test of recovery fails
	// on them as on a run that stays down.
	Unhealthy int
}

// tipPolicy is a policy a tipping-point map runs: its clients' retry
// policy, built on the run's engine, and whether the server runs the
// limiter.
type tipPolicy struct {
	name    string
	build   func(*engine.Engine) (*retry.Policy, error)
	limited bool
	resends bool          // msModel.resends
	timeout time.Duration // the callers' timeout; zero means the scenario's
}

// tipPolicies are the map's policies of the scenario's rows: the
// clients of Huang et al. resending at once, unherd's default, the
// default against a server with the limiter, and the user's policy if p
// has one (SetPolicy), with its callers' timeout.
func tipPolicies(p *metastableParams) []tipPolicy {
	var out []tipPolicy
	for _, name := range []string{msResend, msDefault, msLimited} {
		c := msCase{policy: name}
		out = append(out, tipPolicy{name: name, limited: name == msLimited, resends: name == msResend,
			build: func(*engine.Engine) (*retry.Policy, error) { return c.retryPolicy(p) }})
	}
	if p.user != nil {
		u := userTipPolicy(*p.user)
		u.name, u.timeout = msYours, p.user.Retry.AttemptTimeout
		out = append(out, u)
	}
	return out
}

// userTipPolicy is a user's policy on the map: its clients call through
// it, its budget on the run's clock, against the server without a
// limiter.
func userTipPolicy(s policySpec) tipPolicy {
	return tipPolicy{name: s.Name, build: s.build}
}

// TippingPoints maps the tipping point of the metastable scenario's
// server, load and client timeout over the triggers of its parameters
// map-cuts and map-lengths (p is the metastable scenario's Params, from
// its Scenario.Params, set as its Fields allow; any other is an error
// wrapping ErrInvalidParams): for each of three policies (callers resending at once
// without limit, unherd's default policy, and the default against a
// server running the limit package's Limiter and shedding callers who
// have gone), and a fourth, "yours", if p has a user's policy
// (PolicyParams.SetPolicy; its callers time out after its attempt timeout, if it sets
// one), and for each cut, the shortest of the lengths that leaves
// the system down (an outcome of "stays down" as the scenario judges
// it), and each policy's margin, its smallest such trigger.
//
// The map assumes that a longer trigger of the same cut, or a larger cut
// of the same length, does no less harm. Each policy first meets the
// map's largest trigger (its largest cut for its longest length): if it
// recovers, it recovers from every trigger of the map. Otherwise each
// cut's boundary is found by bisection over the lengths: the longest
// length first, then halving the interval between the longest length
// known to recover and the shortest known to stay down.
// A cell (a cut and a length) runs on its own stream of o.Seed, derived
// from the cut and the length alone, so that a cell's outcome depends on
// neither the policy's order, the map's other cells nor the number of
// workers; the policies run a cell on the same stream. The bisections
// run in parallel over o.Workers goroutines (zero means GOMAXPROCS). A
// run stops early once it is provably down (see the package doc), or
// once it has recovered: 10 s in a row after the trigger each with a
// goodput of at least 95% of the load, and nobody left in the queue.
func TippingPoints(ctx context.Context, p Params, o Options) (*TippingMap, error) {
	mp, err := validParams[*metastableParams](metastableScenario.name, p)
	if err != nil {
		return nil, err
	}
	return tippingPoints(ctx, mp, tipPolicies(mp), o)
}

// tippingPoints is TippingPoints for the given policies.
func tippingPoints(ctx context.Context, p *metastableParams, pols []tipPolicy, o Options) (*TippingMap, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	g := &TippingMap{}
	for _, c := range p.MapCuts {
		g.Cuts = append(g.Cuts, float64(c)/100)
	}
	for _, l := range p.MapLengths {
		g.Lengths = append(g.Lengths, time.Duration(l)*time.Second)
	}
	type chain struct {
		boundary        time.Duration
		runs, unhealthy int
		err             error
	}
	n, last := len(g.Cuts), len(g.Lengths)-1
	largest := Trigger{Cut: g.Cuts[n-1], Length: g.Lengths[last]}
	first, second := halves(o)
	// The largest trigger first, for every policy: one that recovers from
	// it recovers from every trigger of the map.
	tops, err := sweep(ctx, first, len(pols), func(j int) chain {
		ch := chain{runs: 1}
		outcome, err := tipCell(ctx, p, o.Seed, pols[j], largest)
		switch {
		case err != nil:
			ch.err = err
		case outcome == outcomeNever:
			ch.unhealthy = 1
		}
		if outcome != outcomeRecovers {
			ch.boundary = largest.Length
		}
		return ch
	})
	if err != nil {
		return nil, err
	}
	var tipping []int // the policies that stay down after the largest trigger
	for j, top := range tops {
		if top.err != nil {
			return nil, fmt.Errorf("tipping point of %s: %w", pols[j].name, top.err)
		}
		if top.boundary > 0 {
			tipping = append(tipping, j)
		}
	}
	if len(tipping) == 0 && second.Progress != nil {
		second.Progress(1, 1) // nothing left to map
	}
	chains, err := sweep(ctx, second, len(tipping)*n, func(i int) chain {
		pol, cut := pols[tipping[i/n]], g.Cuts[i%n]
		var ch chain
		down := func(k int) bool {
			if ch.err != nil {
				return false
			}
			ch.runs++
			outcome, err := tipCell(ctx, p, o.Seed, pol, Trigger{Cut: cut, Length: g.Lengths[k]})
			if err != nil {
				ch.err = err
			}
			if outcome == outcomeNever {
				ch.unhealthy++
			}
			return outcome != outcomeRecovers
		}
		if cut != largest.Cut && !down(last) { // the largest cut's longest is known to stay down
			return ch
		}
		lo, hi := -1, last // lo recovers (or is below the grid), hi stays down
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if down(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		ch.boundary = g.Lengths[hi]
		return ch
	})
	if err != nil {
		return nil, err
	}
	out := g
	for j, pol := range pols {
		tp := TippingPolicy{Name: pol.name, Boundary: make([]time.Duration, n), Runs: tops[j].runs, Unhealthy: tops[j].unhealthy}
		k := slices.Index(tipping, j)
		if k < 0 {
			out.Policies = append(out.Policies, tp)
			continue
		}
		for i := range n {
			ch := chains[k*n+i]
			if ch.err != nil {
				return nil, fmt.Errorf("tipping point of %s at a %g%% cut: %w", pol.name, round(100*g.Cuts[i], 1), ch.err)
			}
			tp.Runs += ch.runs
			tp.Unhealthy += ch.unhealthy
			tp.Boundary[i] = ch.boundary
			if ch.boundary == 0 {
				continue
			}
			t := Trigger{Cut: g.Cuts[i], Length: ch.boundary}
			if tp.Margin == nil || t.Work() < tp.Margin.Work() || (t.Work() == tp.Margin.Work() && t.Length < tp.Margin.Length) {
				tp.Margin = &t
			}
		}
		out.Policies = append(out.Policies, tp)
	}
	return out, nil
}

// tipStream is the stream of a map's cell: a mix of the cut's and the
// length's bits, so that the cell's draws depend on the trigger alone.
func tipStream(t Trigger) uint64 {
	return engine.Mix(math.Float64bits(t.Cut) ^ engine.Mix(uint64(t.Length)))
}

// tipCell runs one cell of a map: the trigger t against the metastable
// model of p with pol's clients (and limiter), and returns its outcome.
func tipCell(ctx context.Context, p *metastableParams, seed uint64, pol tipPolicy, t Trigger) (string, error) {
	m := msModel{rate: p.Rate, threads: p.Threads, service: p.Service, timeout: cmp.Or(pol.timeout, p.Timeout),
		from: p.Before, to: p.Before + t.Length, cut: t.Cut, end: p.Before + t.Length + p.After,
		limited: pol.limited, resends: pol.resends, stopUp: true}
	st, err := runMetastableWith(ctx, seed, tipStream(t), m, pol.build)
	if err != nil {
		return "", err
	}
	return measureMetastable(p, msCase{cut: t.Cut, length: t.Length, load: 1, policy: pol.name}, st).outcome, nil
}

// smallestTip finds pol's smallest trigger, by Trigger.Work, among the
// cells of p's map that leave the system down, for a what-if's margin:
// it runs the largest trigger first (the largest cut for the longest
// length), and if the system recovers from it, takes it to recover from
// every smaller one too (nil); else it runs the cells in order of work,
// a batch of as many as there are workers at a time, and returns the
// first that stays down. That one is the smallest whatever the map's
// shape, and costs one run that stays down (slow) where a bisection per
// cut costs several. Each cell runs on the stream TippingPoints gives
// it. It returns the runs made and how many of them were unhealthy.
func smallestTip(ctx context.Context, p *metastableParams, pol tipPolicy, o Options) (tip *Trigger, runs, unhealthy int, err error) {
	if err := p.Validate(); err != nil {
		return nil, 0, 0, err
	}
	var cells []Trigger
	for _, c := range p.MapCuts {
		for _, l := range p.MapLengths {
			cells = append(cells, Trigger{Cut: float64(c) / 100, Length: time.Duration(l) * time.Second})
		}
	}
	largest := cells[len(cells)-1]
	slices.SortStableFunc(cells, func(a, b Trigger) int {
		return cmp.Or(cmp.Compare(a.Work(), b.Work()), cmp.Compare(a.Length, b.Length))
	})
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	outcomes := map[Trigger]string{}
	// The progress is the cells run over all the cells, whole when done:
	// a sweep's own would start again at each batch.
	report := o.Progress
	o.Progress = nil
	run := func(batch []Trigger) error {
		out, err := sweep(ctx, o, len(batch), func(i int) result[string] {
			s, err := tipCell(ctx, p, o.Seed, pol, batch[i])
			return result[string]{s, err}
		})
		if err != nil {
			return err
		}
		for i, r := range out {
			if r.err != nil {
				return r.err
			}
			runs++
			if r.v == outcomeNever {
				unhealthy++
			}
			outcomes[batch[i]] = r.v
		}
		if report != nil {
			report(runs, len(cells))
		}
		return nil
	}
	if report != nil {
		defer report(len(cells), len(cells))
	}
	if err := run([]Trigger{largest}); err != nil {
		return nil, 0, 0, err
	}
	if outcomes[largest] == outcomeRecovers {
		return nil, runs, unhealthy, nil
	}
	for start := 0; start < len(cells); start += workers {
		var batch []Trigger
		for _, c := range cells[start:min(start+workers, len(cells))] {
			if _, done := outcomes[c]; !done {
				batch = append(batch, c)
			}
		}
		if err := run(batch); err != nil {
			return nil, 0, 0, err
		}
		for _, c := range cells[start:min(start+workers, len(cells))] {
			if outcomes[c] != outcomeRecovers {
				return &c, runs, unhealthy, nil
			}
		}
	}
	return nil, runs, unhealthy, nil // not reached: the largest stays down
}

// result is a value or an error, from one run of a sweep.
type result[T any] struct {
	v   T
	err error
}

const unherdTipping = "unherd's design, DESIGN.md (safe by default; the trigger size x length boundary for each policy): no trigger of the map leaves the default or the default with the limiter down"

// claims judges the map against unherd's goal: neither the default
// policy nor the default with the server's limiter stays down after any
// trigger of the map. Each claim's measure names the policy's
// boundaries, and those of the callers resending at once beside them.
func (m *TippingMap) claims() []Claim {
	var resend string
	for _, pol := range m.Policies {
		if pol.Name == msResend {
			resend = "; callers resending at once stay down " + m.boundaries(pol)
		}
	}
	var claims []Claim
	for _, pol := range m.Policies {
		if pol.Name != msDefault && pol.Name != msLimited {
			continue
		}
		text := fmt.Sprintf("%s: the server recovers from every trigger of the map, cuts of %g%% to %g%% of its CPU for %v to %v",
			pol.Name, round(100*m.Cuts[0], 1), round(100*m.Cuts[len(m.Cuts)-1], 1), m.Lengths[0], m.Lengths[len(m.Lengths)-1])
		measured := "no trigger of the map leaves it down"
		if pol.Margin != nil {
			measured = "stays down " + m.boundaries(pol)
		}
		if pol.Unhealthy > 0 {
			measured += fmt.Sprintf("; %d of its %d runs were not healthy before the trigger", pol.Unhealthy, pol.Runs)
		}
		measured += resend
		claims = append(claims, newClaim(unherdTipping, text, pol.Margin == nil && pol.Unhealthy == 0,
			strings.ReplaceAll(measured, "%", "%%")))
	}
	return claims
}

// boundaries says pol's boundaries on m: "from 20s at 70%, 10s at 80%
// (and from none at 60%, 65%)".
func (m *TippingMap) boundaries(pol TippingPolicy) string {
	var at, none []string
	for i, b := range pol.Boundary {
		cut := fmt.Sprintf("%g%%", round(100*m.Cuts[i], 1))
		if b == 0 {
			none = append(none, cut)
			continue
		}
		at = append(at, fmt.Sprintf("%v at %s", b, cut))
	}
	out := "from " + strings.Join(at, ", ")
	if len(none) > 0 {
		out += fmt.Sprintf(" (after no trigger of %s up to %v)", strings.Join(none, ", "), m.Lengths[len(m.Lengths)-1])
	}
	return out
}

// Chart returns the map as a chart: for each policy, the shortest
// trigger length that leaves the system down (Y, seconds) by the
// trigger's cut (X, percent of the CPU), at the cuts where some length
// does; the triggers on and above a policy's line leave it down, those
// below it recover. A line across the chart marks the longest trigger
// tried, and its label names the policies that recover from every
// trigger of the map, which have no line of their own; if none has one,
// theirs is drawn along it.
func (m *TippingMap) Chart() Chart {
	c := Chart{Name: "metastable_tipping", Title: "Tipping point: the shortest trigger that leaves the server down, by CPU cut",
		XLabel: "trigger: share of the server's CPU cut, %", YLabel: "trigger length, s"}
	longest := m.Lengths[len(m.Lengths)-1].Seconds()
	var never []string
	for _, pol := range m.Policies {
		s := Series{Name: pol.Name + ": down at and above"}
		if pol.Unhealthy > 0 {
			s.Name += " (unhealthy before the trigger)"
		}
		for i, cut := range m.Cuts {
			if b := pol.Boundary[i]; b > 0 {
				s.X, s.Y = append(s.X, round(100*cut, 1)), append(s.Y, b.Seconds())
			}
		}
		if len(s.X) == 0 {
			never = append(never, pol.Name)
			continue
		}
		c.Series = append(c.Series, s)
	}
	label := fmt.Sprintf("longest trigger tried, %g s", longest)
	if len(never) > 0 {
		verb := "recovers"
		if len(never) > 1 {
			verb = "recover"
		}
		label += fmt.Sprintf(": %s %s from every trigger", strings.Join(never, " and "), verb)
	}
	c.Lines = []Line{{Y: longest, Label: label}}
	if len(c.Series) == 0 {
		s := Series{Name: strings.Join(never, ", ") + ": none tips"}
		for _, cut := range m.Cuts {
			s.X, s.Y = append(s.X, round(100*cut, 1)), append(s.Y, longest)
		}
		c.Series = append(c.Series, s)
	}
	return c
}
