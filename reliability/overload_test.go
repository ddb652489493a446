//go:build reliability

package reliability

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/unherdhttp"
)

// protection is what stands between the network and the workServer's
// handler: server middleware that may refuse a request before it takes a
// place in the queue.
type protection func(http.Handler) http.Handler

// protectionRow is one protection of TestOverload's table. new builds a
// fresh one for a run; state, if not nil, describes its state for the log
// (a limiter's current limit).
type protectionRow struct {
	name string
	// honoursContext is the workServer's knob: its handler leaves the
	// queue, and stops working, when the request's context is done.
	honoursContext bool
	// judged rows are checked against overloadGoals; the others are
	// baselines.
	judged bool
	new    func(t *testing.T) (p protection, state func() string)
}

// protections are the rows of TestOverload: two baselines, and
// unherdhttp's shedding middleware over the baseline handler (which does
// not honour its context: the protection must not need the handler's
// help), with an adaptive limiter at its defaults, priorities from the
// limit.PriorityHeader the callers set, and the caller's remaining
// deadline, which unherdhttp's Transport sends, on the handler's context.
var protections = []protectionRow{
	{name: "none", new: noProtection},
	{name: "none, handler honours ctx", honoursContext: true, new: noProtection},
	{name: "unherdhttp.Shed", judged: true, new: shedding},
}

func noProtection(*testing.T) (protection, func() string) { return nil, nil }

// shedding is unherdhttp.Shed over a limit.Limiter with its defaults.
func shedding(t *testing.T) (protection, func() string) {
	l, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := unherdhttp.Shed(unherdhttp.ShedConfig{Limiter: l})
	if err != nil {
		t.Fatal(err)
	}
	return p, func() string { return fmt.Sprintf("limit %d, %d in flight", l.Limit(), l.InFlight()) }
}

// overloadScale is the size of a run.
type overloadScale struct {
	name     string
	workers  int
	phaseLen time.Duration
}

var (
	// suiteScale runs in the suite: all of TestOverload in about 30 s.
	suiteScale = overloadScale{name: "suite", workers: 8, phaseLen: 2500 * time.Millisecond}
	// fullScale is the run, 8 s per phase, about 35 s per row;
	// UNHERD_RELIABILITY_OVERLOAD=full selects it. Its baseline holds
	// about 12,000 requests in the handler at once, each with its
	// connection: the process needs that many file descriptors.
	fullScale = overloadScale{name: "full", workers: 8, phaseLen: 8 * time.Second}
)

// The workload of TestOverload.
const (
	overloadMedian   = 20 * time.Millisecond // median service time
	overloadSigma    = 0.5                   // of the service time's log: p99 about 3.2x the median
	overloadTimeout  = time.Second           // each caller's timeout
	overloadCritical = 0.2                   // share of calls marked critical
	overloadMaxCalls = 4000                  // calls in flight at most; more are refused by the harness
	recoveryWindow   = 250 * time.Millisecond
	recoveryShare    = 0.9 // of the offered load, for goodput to count as back
)

// overloadGoals are what server-side protection must reach in the
// issue's run; a judged row is checked against them at full scale.
var overloadGoals = goals{goodputOver: 0.9, p99Over: 2, wastedOver: 0.01, criticalAt4x: 0.95, recovery: time.Second, goodputUnloaded: 0.95}

// suiteGoals are the goals at the suite's scale, whose phases of 2.5 s
// leave the adaptive limit a second or two to settle in each: goodput and
// critical success are judged with a margin (the limit settled at 7 of 8
// workers on one seed of seven, and 2x goodput was then 0.85 of
// capacity), the others as at full scale.
var suiteGoals = goals{goodputOver: 0.8, p99Over: 2, wastedOver: 0.01, criticalAt4x: 0.9, recovery: time.Second, goodputUnloaded: 0.95}

type goals struct {
	goodputOver     float64       // goodput / capacity at 2x and at 4x, at least
	p99Over         float64       // admitted p99 / unloaded p99 at 2x and 4x, at most
	wastedOver      float64       // share of work for callers gone, at 2x and 4x, at most
	criticalAt4x    float64       // critical calls' success rate at 4x, at least
	recovery        time.Duration // goodput back to 90% of the offered load, within
	goodputUnloaded float64       // goodput / offered at 0.5x, both times, at least
}

// phaseResult is one phase of one run.
type phaseResult struct {
	phase                    phase
	offered, goodput         float64 // calls/s arrived; successes/s
	capacity                 float64
	p50, p99                 time.Duration // of successful calls, at the caller
	admittedP99              time.Duration // handler entry to the end of work, of completed work
	wasted                   float64       // share of work time for callers gone
	critical, criticalOK     int
	refused                  int // calls the harness did not start
	recovery                 time.Duration
	recovered, lastPhase     bool
	unloadedP99              time.Duration // admittedP99 of the first phase
	state                    string        // the protection's state at the phase's end
	workStarted, workForGone int
	lag                      time.Duration // p99 of how late calls started
	stretch                  float64       // completed work's time over its drawn service time
}

func (p phaseResult) criticalRate() float64 {
	if p.critical == 0 {
		return 0
	}
	return float64(p.criticalOK) / float64(p.critical)
}

func (p phaseResult) p99Ratio() float64 {
	if p.unloadedP99 == 0 {
		return 0
	}
	return float64(p.admittedP99) / float64(p.unloadedP99)
}

const overloadHeader = "| protection | phase | offered | goodput / capacity | success p50 / p99 | admitted p99 / unloaded | work for callers gone | critical success | goodput back to 90% |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |"

func (p phaseResult) row(name string) string {
	rec := ""
	if p.lastPhase {
		rec = fmt.Sprintf("%.2f s", p.recovery.Seconds())
		if !p.recovered {
			rec = "not within the phase"
		}
	}
	refused := ""
	if p.refused > 0 {
		refused = fmt.Sprintf(" (%d refused by the harness)", p.refused)
	}
	return fmt.Sprintf("| %s | %s | %.0f/s (%.2fx)%s | %.2fx | %s / %s | %s (%.1fx) | %.0f%% | %.0f%% | %s |",
		name, p.phase.name, p.offered, p.offered/p.capacity, refused, p.goodput/p.capacity,
		ms(p.p50), ms(p.p99), ms(p.admittedP99), p.p99Ratio(), 100*p.wasted, 100*p.criticalRate(), rec)
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// TestOverload runs the overload (see the package doc) for every
// protection, logs a table of what each phase measured (appended to
// $UNHERD_RELIABILITY_REPORT, if set; written as JSON to
// $UNHERD_RELIABILITY_OVERLOAD_JSON, if set), and checks the judged rows.
func TestOverload(t *testing.T) {
	sc := suiteScale
	if os.Getenv("UNHERD_RELIABILITY_OVERLOAD") == "full" {
		sc = fullScale
	}
	var rows, notes []string
	var capacity float64
	var results []overloadRow
	for _, pr := range protections {
		t.Run(pr.name, func(t *testing.T) {
			res := runOverload(t, sc, pr)
			capacity = res[0].capacity
			results = append(results, newOverloadRow(pr, res))
			if why := overloadHarnessFailed(res); why != "" {
				notes = append(notes, fmt.Sprintf("The machine could not run the harness for %q as designed (%s): its figures measure the machine too.", pr.name, why))
			}
			for _, p := range res {
				rows = append(rows, p.row(pr.name))
				t.Log(p.row(pr.name))
				t.Logf("%s, %s: calls started late by %v at p99; %d pieces of work, %d for callers gone; work took %.2fx its drawn service time", pr.name, p.phase.name, p.lag.Round(time.Millisecond), p.workStarted, p.workForGone, p.stretch)
				if p.state != "" {
					t.Logf("%s: at the end of %s: %s", pr.name, p.phase.name, p.state)
				}
			}
			if !pr.judged {
				return // a baseline
			}
			g := suiteGoals
			if sc == fullScale {
				g = overloadGoals
			}
			judgeOverload(t, res, g)
		})
	}
	table := fmt.Sprintf("%s scale: %d workers, %v per phase, seed %d.\n\n%s\n%s", sc.name, sc.workers, sc.phaseLen, seed, overloadHeader, join(rows))
	if len(notes) > 0 {
		table += "\n\n" + strings.Join(notes, "\n")
	}
	t.Logf("overload:\n%s", table)
	if path := os.Getenv("UNHERD_RELIABILITY_REPORT"); path != "" {
		report(t, path, "overload", table)
	}
	if path := os.Getenv("UNHERD_RELIABILITY_OVERLOAD_JSON"); path != "" {
		run := overloadRun{Scale: sc.name, Seed: seed, Workers: sc.workers, PhaseSeconds: sc.phaseLen.Seconds(),
			Capacity: capacity, Timeout: overloadTimeout.Seconds(), Rows: results}
		if err := writeOverloadJSON(path, run); err != nil {
			t.Error(err)
		}
	}
}

// judgeOverload logs every goal of g against res and checks them.
func judgeOverload(t *testing.T, res []phaseResult, g goals) {
	first, last := res[0], res[len(res)-1]
	for _, p := range res[1:3] {
		t.Logf("goal: at %s goodput %.2fx of capacity (want >= %.2f), admitted p99 %.1fx unloaded (want <= %.0f), work for callers gone %.0f%% (want <= %.0f%%)",
			p.phase.name, p.goodput/p.capacity, g.goodputOver, p.p99Ratio(), g.p99Over, 100*p.wasted, 100*g.wastedOver)
	}
	t.Logf("goal: critical success at 4x %.0f%% (want >= %.0f%%)", 100*res[2].criticalRate(), 100*g.criticalAt4x)
	t.Logf("goal: goodput back to %.0f%% of the offered load %v after the overload (recovered: %v; want within %v)", 100*recoveryShare, last.recovery, last.recovered, g.recovery)
	for _, p := range []phaseResult{first, last} {
		t.Logf("goal: at %s goodput %.2f of the offered load (want >= %.2f)", p.phase.name, p.goodput/p.offered, g.goodputUnloaded)
	}
	if why := overloadHarnessFailed(res); why != "" {
		t.Skipf("the machine could not run the harness: %s; the goals would measure the machine, so they are not judged (run the suite on a quieter machine)", why)
	}
	for _, p := range res[1:3] {
		if r := p.goodput / p.capacity; r < g.goodputOver {
			t.Errorf("at %s goodput %.2fx of capacity, want at least %.2f", p.phase.name, r, g.goodputOver)
		}
		if r := p.p99Ratio(); r > g.p99Over {
			t.Errorf("at %s the admitted p99 was %.1fx the unloaded p99, want at most %.0f", p.phase.name, r, g.p99Over)
		}
		if p.wasted > g.wastedOver {
			t.Errorf("at %s %.1f%% of the work was for callers gone, want at most %.0f%%", p.phase.name, 100*p.wasted, 100*g.wastedOver)
		}
	}
	if r := res[2].criticalRate(); r < g.criticalAt4x {
		t.Errorf("at 4x %.0f%% of critical calls succeeded, want at least %.0f%%", 100*r, 100*g.criticalAt4x)
	}
	if !last.recovered || last.recovery > g.recovery {
		t.Errorf("goodput back to %.0f%% of the offered load after %v (recovered: %v), want within %v", 100*recoveryShare, last.recovery, last.recovered, g.recovery)
	}
	for _, p := range []phaseResult{first, last} {
		if r := p.goodput / p.offered; r < g.goodputUnloaded {
			t.Errorf("at %s goodput %.2f of the offered load, want at least %.2f", p.phase.name, r, g.goodputUnloaded)
		}
	}
}

// Bounds on the machine, past which a run measures it rather than the
// protection.
const (
	maxLag     = 50 * time.Millisecond // calls started late, p99 of a phase
	maxStretch = 1.2                   // work's time over its drawn service time
)

// overloadHarnessFailed says how the machine failed to run the harness as
// designed, or returns "": in some phase the generator started calls late
// by more than maxLag at p99 (it was waiting for the CPU, so the load was
// not the one offered), or the work took more than maxStretch times its
// drawn service time (the sleeps overran, so the capacity was lower than
// the one computed).
func overloadHarnessFailed(res []phaseResult) string {
	for _, p := range res {
		switch {
		case p.lag > maxLag:
			return fmt.Sprintf("at %s the callers started late by %v at p99, more than %v", p.phase.name, p.lag.Round(time.Millisecond), maxLag)
		case p.stretch > maxStretch:
			return fmt.Sprintf("at %s the work took %.2fx its drawn service time, more than %.1fx", p.phase.name, p.stretch, maxStretch)
		}
	}
	return ""
}

// runOverload runs one protection through the phases and measures them.
func runOverload(t *testing.T, sc overloadScale, pr protectionRow) []phaseResult {
	p, state := pr.new(t)
	srv := newWorkServer(t, sc.workers, overloadMedian, overloadSigma, pr.honoursContext, p, seed)
	tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	o := offer{
		capacity:    srv.capacity(),
		phaseLen:    sc.phaseLen,
		timeout:     overloadTimeout,
		critical:    overloadCritical,
		maxInFlight: overloadMaxCalls,
		seed:        seed,
	}
	states := make([]string, len(overloadPhases))
	if state != nil {
		// Sample the protection's state at each phase's end, from a
		// goroutine that ends with the run.
		done := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			begin := time.Now()
			for i := range overloadPhases {
				select {
				case <-time.After(time.Until(begin.Add(time.Duration(i+1) * sc.phaseLen))):
					states[i] = state()
				case <-done:
					return
				}
			}
		}()
		defer func() {
			close(done)
			select {
			case <-sampled:
			case <-time.After(5 * time.Second):
				t.Error("the protection's state sampler did not end within 5 s of the run")
			}
		}()
	}
	start, calls, err := o.run(tr, srv.url)
	if err != nil {
		t.Fatal(err)
	}
	srv.halt()
	works := srv.recorded()
	t.Logf("%s: %d calls, %d requests reached the handler, at most %d in it at once; capacity %.0f/s (%d workers, mean service %v)",
		pr.name, len(calls), len(works), srv.peak.Load(), srv.capacity(), sc.workers, srv.meanService().Round(100*time.Microsecond))
	res := measure(start, sc.phaseLen, srv.capacity(), calls, works)
	for i := range res {
		res[i].state = states[i]
	}
	return res
}

// measure computes each phase's figures from the calls and the work.
func measure(start time.Time, phaseLen time.Duration, capacity float64, calls []call, works []work) []phaseResult {
	res := make([]phaseResult, len(overloadPhases))
	for i, ph := range overloadPhases {
		from := start.Add(time.Duration(i) * phaseLen)
		to := from.Add(phaseLen)
		in := func(at time.Time) bool { return !at.Before(from) && at.Before(to) }
		p := phaseResult{phase: ph, capacity: capacity, lastPhase: i == len(overloadPhases)-1}
		var arrived int
		var lat []time.Duration
		var lags []time.Duration
		for _, c := range calls {
			if in(c.scheduled) {
				lags = append(lags, c.arrived.Sub(c.scheduled))
				arrived++
				if c.refused {
					p.refused++
				}
				if c.critical {
					p.critical++
					if c.ok {
						p.criticalOK++
					}
				}
			}
			if c.ok && in(c.done) {
				lat = append(lat, c.done.Sub(c.arrived))
			}
		}
		secs := phaseLen.Seconds()
		p.offered = float64(arrived) / secs
		p.goodput = float64(len(lat)) / secs
		p.p50, p.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
		p.lag = quantile(lags, 0.99)
		var admitted []time.Duration
		var all, gone, worked, drawn time.Duration
		for _, w := range works {
			if w.start.IsZero() {
				continue
			}
			if !w.cut && in(w.end) {
				admitted = append(admitted, w.end.Sub(w.arrived))
				worked += w.end.Sub(w.start)
				drawn += w.drawn
			}
			// The part of the work inside the phase.
			d := minTime(w.end, to).Sub(maxTime(w.start, from))
			if d <= 0 {
				continue
			}
			all += d
			p.workStarted++
			if w.gone {
				gone += d
				p.workForGone++
			}
		}
		p.admittedP99 = quantile(admitted, 0.99)
		if drawn > 0 {
			p.stretch = float64(worked) / float64(drawn)
		}
		if all > 0 {
			p.wasted = float64(gone) / float64(all)
		}
		p.unloadedP99 = res[0].admittedP99
		if i == 0 {
			p.unloadedP99 = p.admittedP99
		}
		if p.lastPhase {
			p.recovery, p.recovered = recoveryIn(from, to, ph.load*capacity, calls)
		}
		res[i] = p
	}
	return res
}

// recoveryIn returns how long after from the successes completed in a
// recoveryWindow first reached recoveryShare of rate per second; ok is
// false if they did not before to.
func recoveryIn(from, to time.Time, rate float64, calls []call) (time.Duration, bool) {
	var done []time.Time
	for _, c := range calls {
		if c.ok && !c.done.Before(from) && c.done.Before(to) {
			done = append(done, c.done)
		}
	}
	slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
	want := recoveryShare * rate * recoveryWindow.Seconds()
	for at := from; !at.Add(recoveryWindow).After(to); at = at.Add(bucket) {
		lo, _ := slices.BinarySearchFunc(done, at, func(a, b time.Time) int { return a.Compare(b) })
		hi, _ := slices.BinarySearchFunc(done, at.Add(recoveryWindow), func(a, b time.Time) int { return a.Compare(b) })
		if float64(hi-lo) >= want {
			return at.Sub(from), true
		}
	}
	return 0, false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// quantile returns the q-quantile of ds (nearest rank), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
