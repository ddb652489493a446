package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/unherd/unherd/sim/internal/engine"
)

// Scenario is one experiment the simulator runs. Implementations are
// deterministic: the same Params and Options.Seed give byte-identical
// results.
type Scenario interface {
	// Name is the scenario's command-line name: jitter, outage, ratelimit,
	// storm, layers, hedge.
	Name() string
	// Describe is one sentence on what the scenario shows and its source.
	Describe() string
	// Population says whether the clients are a "closed" population (a
	// fixed set that waits for answers), an "open" stream (new requests
	// arrive whatever happens), or "closed and open" for scenarios that
	// run both.
	Population() string
	// Params returns a fresh parameter set holding the published defaults.
	Params() Params
	// Run runs the scenario. It reports progress through o.Progress, stops
	// early with ctx's error when ctx is done, and spreads independent runs
	// over o.Workers goroutines.
	Run(ctx context.Context, p Params, o Options) (*Result, error)
}

// Params is a scenario's parameter set, made by its Scenario.Params with
// the published defaults. Each parameter is set through the Field that
// Fields gives for it; Scenario.Run validates the set before it runs.
type Params interface {
	// Fields lists the parameters, bound to the set: a command line makes
	// each a flag (with its current value as the default), a form an
	// input. The names seed, workers, json, out and policy belong to the
	// command line and are not used.
	Fields() []Field
	// Validate reports a parameter that cannot work, naming it as its
	// field is named.
	Validate() error
	// Quick sets the report's sizes: the published ones wherever five
	// seeds of them finish in a few seconds on two cores, else smaller
	// sizes of the same shape (the scenario's doc says which).
	Quick()
}

// Field is one parameter of a scenario.
type Field struct {
	// Name names the parameter: its flag, its key in Result.Params.
	Name string
	// Usage says what it means, in a few words.
	Usage string
	// Value points at the parameter in its set: an *int, *float64,
	// *time.Duration or *[]int (a list).
	Value any
}

// paramValues returns p's parameters by name, for JSON output (Result.Params):
// integers and numbers as they are, durations as their String, lists as
// copies.
func paramValues(p Params) map[string]any {
	fs := p.Fields()
	m := make(map[string]any, len(fs))
	for _, f := range fs {
		switch v := f.Value.(type) {
		case *int:
			m[f.Name] = *v
		case *float64:
			m[f.Name] = *v
		case *time.Duration:
			m[f.Name] = v.String()
		case *[]int:
			m[f.Name] = slices.Clone(*v)
		default:
			panic(fmt.Sprintf("sim: field %q holds a %T; want *int, *float64, *time.Duration or *[]int", f.Name, f.Value))
		}
	}
	return m
}

// Options controls how a scenario runs, not what it simulates.
type Options struct {
	// Seed makes the run reproducible. Zero is a valid seed.
	Seed uint64
	// Workers is the number of goroutines that run independent runs of a
	// sweep; zero means runtime.GOMAXPROCS(0). The result does not depend
	// on it.
	Workers int
	// Progress, if set, is called with the number of runs done and the
	// total, from any goroutine, serially.
	Progress func(done, total int)
	// Slots, if set, bounds the runs in progress across every sweep
	// given the same channel: a run takes a slot (a send) before it
	// starts and gives it back (a receive) when it ends, and runs waiting
	// for one get it in the order they asked. A caller running several
	// scenarios at once passes one channel with a slot per core, so that
	// the cores stay busy to the end without more runs in memory than
	// cores; it does not change any result.
	Slots chan struct{}
}

// Result is what a scenario run produced: a table, the claims it checks,
// and chart data.
type Result struct {
	// Scenario is the name of the scenario that ran (Scenario.Name).
	Scenario string `json:"scenario"`
	// Population is the scenario's Population: "closed", "open" or
	// "closed and open".
	Population string `json:"population"`
	// Params holds the parameters the run used, by Field.Name (integers
	// and numbers as they are, durations as their String, lists as
	// lists), so that a result says how to reproduce it.
	Params map[string]any `json:"params"`
	// Columns lists the row keys in display order.
	Columns []string `json:"-"`
	// Rows is the result table, one row per configuration measured
	// (strategy, policy, client count...), in display order.
	Rows []Row `json:"rows"`
	// Claims are the published claims the scenario checks, each with what
	// this run measured and whether it holds.
	Claims []Claim `json:"claims"`
	// Charts is the data for the scenario's charts; the command line draws
	// them. It is left out of the JSON output.
	Charts []Chart `json:"-"`
	// Seeds lists the seeds a merged result ([RunSeeds]) covers: its
	// numeric cells are medians over them, and so are its charts' points,
	// with the range over the seeds in each series' Lo and Hi.
	// Empty for one run.
	Seeds []uint64 `json:"seeds,omitempty"`
}

// Row is one table row, keyed by column name. Values are strings, ints or
// float64s.
type Row map[string]any

// Chart is data for one chart: several named series over the same axes.
type Chart struct {
	// Name is a file-name-safe identifier, unique within the result.
	Name string
	// Title is the chart's heading.
	Title string
	// XLabel labels the horizontal axis, with its unit if it has one.
	XLabel string
	// YLabel labels the vertical axis, with its unit if it has one.
	YLabel string
	// Series are the lines drawn, in legend order.
	Series []Series
	// XScale and YScale say how each axis is spaced: "" linear (the zero
	// value), "log" for values spanning orders of magnitude, or "nines"
	// for percentiles, spaced by their nines (90 is as far from 50 as 99
	// from 90 and 99.9 from 99: 50, 90, 99, 99.9, 99.99 evenly spaced).
	XScale, YScale string
	// Shade marks spans of the X axis, such as the time a fault lasted.
	Shade []Span
	// Lines are horizontal reference lines, such as a dependency's
	// capacity or a rate limit, drawn across the chart and labelled.
	Lines []Line `json:",omitempty"`
	// XStep, when positive, is the distance between the X axis's ticks
	// on a linear axis, such as a period the data repeats with; zero
	// leaves the ticks to the drawing.
	XStep float64 `json:",omitempty"`
	// Notes are short texts on the plot, each at a point of the data it
	// explains.
	Notes []Note `json:",omitempty"`
}

// Note is a text on a chart about the point (X, Y), in the axes' units.
type Note struct {
	X, Y float64
	Text string
}

// Line is a horizontal reference line at Y, labelled.
type Line struct {
	Y     float64
	Label string
}

// The axis scales of Chart.XScale and YScale.
const (
	scaleLog   = "log"
	scaleNines = "nines"
)

// Span is a stretch of a chart's X axis, shaded and labelled.
type Span struct {
	From, To float64
	Label    string
}

// Series is one line of a chart.
type Series struct {
	// Name labels the line in the legend: a strategy or policy.
	Name string
	// X and Y are the points' coordinates, X[i] with Y[i], in the units
	// of the chart's axis labels; they have the same length.
	X, Y []float64
	// Lo and Hi, in a result merged over seeds ([RunSeeds]), are the
	// lowest and highest Y over the seeds at each X, Y being the median;
	// charts shade the range between them. Empty for one run.
	Lo, Hi []float64 `json:",omitempty"`
}

// registry holds every scenario, by name.
var registry = byName(fleetScenario, hedgeScenario, jitterScenario, layersScenario,
	metastableScenario, outageScenario, periodicScenario, ratelimitScenario, stormScenario)

func byName(ss ...*scenario) map[string]Scenario {
	m := make(map[string]Scenario, len(ss))
	for _, s := range ss {
		m[s.name] = s
	}
	return m
}

// Scenarios returns every scenario, sorted by name.
func Scenarios() []Scenario { return sorted(registry) }

// sorted returns m's scenarios, sorted by name.
func sorted(m map[string]Scenario) []Scenario {
	out := make([]Scenario, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Lookup returns the scenario called name, one of [Scenarios].
func Lookup(name string) (Scenario, bool) {
	s, ok := registry[name]
	return s, ok
}

// epoch is the wall-clock instant at which every run's virtual time
// starts: engine.Epoch. Library objects that read a clock (budgets,
// breakers, hedgers) are given the run's virtual clock, which starts here.
var epoch = engine.Epoch
