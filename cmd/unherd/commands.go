package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unherd/unherd/cmd/unherd/internal/policy"
	"github.com/unherd/unherd/cmd/unherd/internal/progress"
	"github.com/unherd/unherd/cmd/unherd/internal/report"
	"github.com/unherd/unherd/cmd/unherd/internal/table"
	"github.com/unherd/unherd/sim"
)

// defaultSeed is the seed every command uses unless --seed says otherwise.
const defaultSeed = 1

// runFlags are the flags that control how scenarios run, shared by every
// command.
type runFlags struct {
	seed    seedFlag
	workers int
	quiet   bool
}

func (r *runFlags) register(fs *flag.FlagSet) {
	r.seed = defaultSeed
	fs.Var(&r.seed, "seed", "random `seed`, a whole number from 0 to 18446744073709551615; the same seed gives the same results")
	fs.IntVar(&r.workers, "workers", 0, "goroutines running independent runs (0: one per core); results do not depend on it")
	fs.BoolVar(&r.quiet, "quiet", false, "write no progress on standard error")
}

func (r *runFlags) options() sim.Options {
	return sim.Options{Seed: uint64(r.seed), Workers: r.workers}
}

// seedFlag is --seed: a uint64 whose parse error says what is valid.
type seedFlag uint64

func (s *seedFlag) String() string { return strconv.FormatUint(uint64(*s), 10) }

func (s *seedFlag) Set(v string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a seed: want a whole number from 0 to %d", v, uint64(math.MaxUint64))
	}
	*s = seedFlag(n)
	return nil
}

// meter is what reports a run's progress: a progress.Bar or
// progress.Lines.
type meter interface {
	Update(done, total int)
	Finish()
}

// progress returns the meter for work labelled desc: a bar when stderr is
// a terminal, lines otherwise, nothing when quiet.
func (e *env) progress(desc string, quiet bool) meter {
	switch {
	case quiet:
		return (*progress.Lines)(nil)
	case e.bars:
		return progress.New(e.stderr, desc, e.now)
	default:
		return progress.NewLines(e.stderr, desc, e.now)
	}
}

// parse parses args into fs. Help goes to stdout; mistakes become usage
// errors that name the flag.
func (e *env) parse(fs *flag.FlagSet, args []string, synopsis string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(e.stdout, "Usage: %s\n\nFlags:\n", synopsis)
		fs.SetOutput(e.stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	if f := fs.Lookup("workers"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if n, ok := g.Get().(int); ok && n < 0 {
				return usagef("%s: -workers %d is negative", fs.Name(), n)
			}
		}
	}
	return nil
}

// runScenario runs s on seeds seeds, with progress on stderr labelled
// desc unless quiet.
func (e *env) runScenario(ctx context.Context, s sim.Scenario, p sim.Params, o sim.Options, seeds int, desc string, quiet bool) (*sim.Result, error) {
	m := e.progress(desc, quiet)
	o.Progress = m.Update
	defer m.Finish()
	return runSeeds(ctx, s, p, o, seeds)
}

// runSeeds runs s on seeds seeds (sim.RunSeeds) and fills in what the
// result leaves out.
func runSeeds(ctx context.Context, s sim.Scenario, p sim.Params, o sim.Options, seeds int) (*sim.Result, error) {
	r, err := sim.RunSeeds(ctx, s, p, o, seeds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name(), err)
	}
	if r == nil {
		return nil, fmt.Errorf("%s: no result", s.Name())
	}
	if r.Scenario == "" {
		r.Scenario = s.Name()
	}
	if r.Params == nil {
		r.Params = sim.Values(p)
	}
	return r, nil
}

// printResult writes a result for a terminal: a heading, the table and
// the claims.
func printResult(w io.Writer, desc string, r *sim.Result) error {
	fmt.Fprintf(w, "== %s (%s)\n", r.Scenario, r.Population)
	if desc != "" {
		fmt.Fprintf(w, "%s\n", desc)
	}
	fmt.Fprintln(w)
	if err := table.Text(w, r); err != nil {
		return err
	}
	if len(r.Claims) > 0 {
		fmt.Fprintln(w)
		if err := table.ClaimsText(w, r.Claims); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// reportSynopsis and whatifSynopsis are the commands' usage lines after
// "unherd ", in the help and in their own -h: every flag they define.
const (
	reportSynopsis = "report [--out DIR] [--seed N] [--seeds N] [--workers N] [--quiet] [--cpuprofile FILE]"
	whatifSynopsis = "whatif --policy FILE|- [--json] [--seed N] [--workers N] [--quiet]"
)

// reportSeeds is how many seeds the report judges every claim on.
const reportSeeds = 5

func (e *env) report(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	out := fs.String("out", "report", "`directory` to write report.md, charts and CSV files into; checked before anything runs")
	seeds := fs.Int("seeds", reportSeeds, "`number` of seeds, from --seed on, every claim is judged on (1 to 100)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to `file` (pprof format; scripts/pgo.sh makes the build's profile with it)")
	var rf runFlags
	rf.register(fs)
	if err := e.parse(fs, args, "unherd "+reportSynopsis); err != nil {
		return err
	}
	if *seeds < 1 || *seeds > 100 {
		return usagef("report: --seeds %d is outside 1 to 100", *seeds)
	}
	if err := writableDir(*out); err != nil {
		return fmt.Errorf("report: --out: %w", err)
	}
	if *cpuprofile != "" {
		stop, err := startProfile(*cpuprofile)
		if err != nil {
			return fmt.Errorf("report: --cpuprofile: %w", err)
		}
		defer stop()
	}
	start := e.now()
	entries, failed, err := e.runReport(ctx, rf, *seeds, start)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return errors.New("report: no scenarios are registered")
	}
	cmdline := "go run ./cmd/unherd report"
	if rf.seed != defaultSeed {
		cmdline += fmt.Sprintf(" --seed %d", rf.seed)
	}
	if *seeds != reportSeeds {
		cmdline += fmt.Sprintf(" --seeds %d", *seeds)
	}
	files, err := report.Write(*out, report.Header{Seed: uint64(rf.seed), Seeds: *seeds, Command: cmdline}, entries)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(e.stdout, "Wrote %s and %d more files.\n", files[0], len(files)-1)
	fmt.Fprintf(e.stdout, "Total wall time: %s for %d scenarios.\n", e.now().Sub(start).Round(time.Millisecond), len(entries))
	if len(failed) > 0 {
		return fmt.Errorf("report: %d of %d scenarios failed: %s", len(failed), len(entries), strings.Join(failed, ", "))
	}
	return nil
}

// runReport runs every scenario at its report sizes on seeds seeds, all
// at once, and prints each result in the scenarios' order as soon as it
// and the ones before it are done. The scenarios share one slot per
// worker (one per core by default): their runs, seeds and scenarios
// alike, queue for a slot in the order they ask, so the cores stay busy
// until the last run ends instead of idling at the end of each scenario.
// It returns the report's entries and the names of the scenarios that
// failed.
func (e *env) runReport(ctx context.Context, rf runFlags, seeds int, start time.Time) ([]report.Entry, []string, error) {
	scenarios := e.scenarios()
	ready := make([]chan struct{}, len(scenarios))
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		for _, r := range ready {
			if r != nil {
				<-r // every scenario stops before the report returns
			}
		}
	}()
	workers := rf.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	o := rf.options()
	o.Slots = make(chan struct{}, workers)
	m := e.progress(fmt.Sprintf("report (%d scenarios)", len(scenarios)), rf.quiet)
	defer m.Finish()
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.Name()
	}
	progressOf, detail := sumProgress(m.Update, names)
	if l, ok := m.(*progress.Lines); ok {
		l.Detail(detail) // name what is still running on each line
	}
	entries := make([]report.Entry, len(scenarios))
	took := make([]time.Duration, len(scenarios))
	for i, s := range scenarios {
		ready[i] = make(chan struct{})
		entries[i] = report.Entry{Name: s.Name(), Description: s.Describe()}
		p := s.Params()
		p.Quick()
		if err := p.Validate(); err != nil {
			entries[i].Err = fmt.Errorf("report parameters: %s", paramMessage(err))
			close(ready[i])
			continue
		}
		so := o
		so.Progress = progressOf(i)
		go func() {
			defer close(ready[i])
			entries[i].Result, entries[i].Err = runSeeds(ctx, s, p, so, seeds)
			took[i] = e.now().Sub(start)
		}()
	}
	var failed []string
	for i, s := range scenarios {
		<-ready[i]
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if err := entries[i].Err; err != nil {
			failed = append(failed, s.Name())
			fmt.Fprintf(e.stderr, "unherd: report: %v\n", err)
			continue
		}
		if err := printResult(e.stdout, s.Describe(), entries[i].Result); err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(e.stdout, "(%s: finished %s into the report; the scenarios run at once)\n\n", s.Name(), took[i].Round(time.Millisecond))
	}
	return entries, failed, nil
}

// sumProgress returns, for each of the concurrent tasks named names, a
// progress function that reports the tasks' mean progress to update, in
// hundredths of a task: the tasks' runs differ in size from one task to
// the next (thousands of small jitter runs, a few long hedge runs), so a
// task counts as much as any other whatever its number of runs. A task
// that has not reported yet counts as not started. detail names the tasks
// not finished yet, with their percentages ("hedge 40%, outage 62%").
// The sums reach update in the order they grow: one computed before
// another but delivered after it is dropped, so the progress never goes
// back.
func sumProgress(update func(done, total int), names []string) (progress func(i int) func(done, total int), detail func() string) {
	var mu sync.Mutex
	pct := make([]int, len(names))
	var sendMu sync.Mutex // held to call update; never while holding mu
	sent := -1            // the largest sum update has had
	progress = func(i int) func(int, int) {
		return func(d, t int) {
			mu.Lock()
			if t > 0 {
				pct[i] = 100 * d / t
			}
			sum := 0
			for _, p := range pct {
				sum += p
			}
			mu.Unlock()
			sendMu.Lock()
			if sum > sent {
				sent = sum
				update(sum, 100*len(names)) // outside mu: update may call detail
			}
			sendMu.Unlock()
		}
	}
	detail = func() string {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		for i, p := range pct {
			if p >= 100 {
				continue
			}
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d%%", names[i], p)
		}
		return b.String()
	}
	return progress, detail
}

// writableDir makes sure dir exists (creating it) and takes new files, so
// that a bad --out fails before a long simulation rather than after it.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s is not a directory that can be created (%v)", dir, pe.Err)
		}
		return err
	}
	f, err := os.CreateTemp(dir, ".unherd-probe-*")
	if err != nil {
		return fmt.Errorf("%s does not take new files: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// reserved are the flags unherd sim defines itself; a scenario parameter
// may not take one of these names.
var reserved = []string{"json", "seed", "seeds", "workers", "quiet", "h", "help"}

func (e *env) sim(ctx context.Context, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprintf(e.stdout, "Usage: unherd sim NAME [flags] [--json] [--seed N] [--seeds N] [--workers N] [--quiet]\n\nScenarios: %s\n", strings.TrimPrefix(e.known(), "known: "))
			return errHelp
		}
		return usagef("sim: want a scenario name first: unherd sim NAME [flags] (%s)", e.known())
	}
	name := args[0]
	s, ok := e.lookup(name)
	if !ok {
		return usagef("sim: unknown scenario %q (%s)", name, e.known())
	}
	p := s.Params()
	fs := flag.NewFlagSet("sim "+name, flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object (scenario, population, params, rows, claims) and nothing else")
	seeds := fs.Int("seeds", 1, "`number` of seeds, from --seed on, to judge the claims on, as the report does (1 to 100)")
	var rf runFlags
	rf.register(fs)
	for _, f := range p.Fields() {
		if fs.Lookup(f.Name) != nil || slices.Contains(reserved, f.Name) {
			return fmt.Errorf("sim %s: the scenario defines flag -%s, which unherd sim uses itself", name, f.Name)
		}
		fs.Var(fieldValue(f), f.Name, f.Usage)
	}
	synopsis := fmt.Sprintf("unherd sim %s [flags] [--json] [--seed N]\n\n%s\nPopulation: %s.", name, s.Describe(), s.Population())
	err := e.parse(fs, args[1:], synopsis)
	if err == nil {
		if verr := p.Validate(); verr != nil {
			err = usagef("sim %s: %s", name, paramMessage(verr))
		}
	}
	var u *usageError
	if errors.As(err, &u) {
		u.help = "unherd sim " + name + " -h"
	}
	if err != nil {
		return err
	}
	if *seeds < 1 || *seeds > 100 {
		return &usageError{msg: fmt.Sprintf("sim %s: --seeds %d is outside 1 to 100", name, *seeds), help: "unherd sim " + name + " -h"}
	}
	r, err := e.runScenario(ctx, s, p, rf.options(), *seeds, "sim "+name, rf.quiet)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, r)
	}
	return printResult(e.stdout, s.Describe(), r)
}

// paramMessage is a parameter error without the sim package's prefix,
// which the command line's own prefix replaces: "--clients: 0 must be
// above zero".
func paramMessage(err error) string {
	var pe *sim.ParamError
	if errors.As(err, &pe) {
		return "--" + pe.Flag + ": " + pe.Msg
	}
	return err.Error()
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (e *env) whatif(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	file := fs.String("policy", "", "YAML or JSON `file` holding the retry policy (attempts, base, cap, jitter, budget, timeouts); - reads standard input")
	asJSON := fs.Bool("json", false, "print one JSON object and nothing else: the policies under policy and default, the verdicts, and results whose params are the scenarios' own")
	var rf runFlags
	rf.register(fs)
	if err := e.parse(fs, args, "unherd "+whatifSynopsis); err != nil {
		return err
	}
	if *file == "" {
		return usagef("whatif: --policy FILE is required (a YAML or JSON file with attempts, base, cap, jitter, budget, timeouts)")
	}
	name, data, err := e.readPolicy(*file)
	if err != nil {
		return fmt.Errorf("whatif: %w", err)
	}
	pol, err := policy.Parse(name, data)
	if err != nil {
		return err // already file:line: field: message
	}
	o := rf.options()
	m := e.progress("whatif", rf.quiet)
	o.Progress = m.Update
	defer m.Finish()
	rep, err := e.whatIf(ctx, pol, o)
	if err != nil {
		return fmt.Errorf("whatif: %w", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, rep)
	}
	return printWhatIf(e.stdout, name, rep)
}

// printWhatIf writes a what-if report for a terminal: the two policies,
// any warnings, the verdicts with their figures side by side, then the
// tables behind them.
func printWhatIf(w io.Writer, file string, rep *sim.WhatIfReport) error {
	from := fmt.Sprintf("%v, from %s", rep.Policy["name"], file)
	if fmt.Sprint(rep.Policy["name"]) == file {
		from = file
	}
	fmt.Fprintf(w, "Your policy (%s): %s\n", from, summary(rep.Policy))
	fmt.Fprintf(w, "Default (%s): %s\n", rep.Default["name"], summary(rep.Default))
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warn)
	}
	fmt.Fprintf(w, "\nVerdict: %s. The dependency serves %.0f requests/s and is down for %s:\n", overall(rep.Overall), rep.Capacity, rep.Outage)
	for _, v := range rep.Verdicts {
		fmt.Fprintf(w, "  %-6s  %s\n", v.Population, v.Summary)
	}
	fmt.Fprintln(w)
	side := &sim.Result{Columns: []string{"measure"}}
	rows := []struct {
		name string
		of   func(sim.Impact) float64
	}{
		{"mean load during the outage / capacity", func(i sim.Impact) float64 { return i.MeanX }},
		{"peak load / capacity", func(i sim.Impact) float64 { return i.PeakX }},
		{"attempts in the outage per call begun in it", func(i sim.Impact) float64 { return i.Amplification }},
		{"recovery after the return, s (-1: none)", func(i sim.Impact) float64 { return i.RecoverS }},
		{"calls that succeeded, %", func(i sim.Impact) float64 { return i.SuccessPct }},
	}
	for _, v := range rep.Verdicts {
		side.Columns = append(side.Columns, v.Population+" yours", v.Population+" default")
	}
	for _, r := range rows {
		row := sim.Row{"measure": r.name}
		for _, v := range rep.Verdicts {
			row[v.Population+" yours"], row[v.Population+" default"] = r.of(v.Yours), r.of(v.Default)
		}
		side.Rows = append(side.Rows, row)
	}
	if err := table.Text(w, side); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nAmplification counts every attempt sent while the dependency is down,")
	fmt.Fprintln(w, "retries of calls begun before it included, over the calls begun in that")
	fmt.Fprintln(w, "time: callers stuck retrying start few new calls, so it can exceed the")
	fmt.Fprintln(w, "attempt cap. It is the load multiplier on the outage, not attempts per call.")
	fmt.Fprintln(w)
	for _, r := range rep.Results {
		if err := printResult(w, "", r); err != nil {
			return err
		}
	}
	return nil
}

// overall says a what-if report's overall judgement as a sentence part.
func overall(j string) string {
	switch j {
	case "worse":
		return "worse than the default (worse for at least one kind of caller)"
	case "better":
		return "better than the default"
	}
	return "similar to the default"
}

// maxPolicyBytes bounds a policy file: a policy is a few lines, and a
// mistaken path (a device, a log) must not be read whole.
const maxPolicyBytes = 1 << 20

// readPolicy reads the policy file at path, or standard input for "-",
// and returns the name its errors are to carry.
func (e *env) readPolicy(path string) (string, []byte, error) {
	name, r := path, e.stdin
	if path == "-" {
		name = "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return "", nil, fmt.Errorf("%s is a directory, not a policy file", path)
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPolicyBytes+1))
	if err != nil {
		return "", nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > maxPolicyBytes {
		return "", nil, fmt.Errorf("%s is larger than %d KiB: a policy file is a few lines of YAML or JSON", name, maxPolicyBytes>>10)
	}
	return name, data, nil
}

// summary is a policy's fields (sim.Policy.Fields) as one line of text.
func summary(d map[string]any) string {
	jitter := fmt.Sprint(d["jitter"], " jitter")
	if d["jitter"] == "none" {
		jitter = "no jitter"
	}
	budget := map[string]string{"none": "no budget", "token": "a token-bucket budget", "ratio": "a ratio budget"}[fmt.Sprint(d["budget"])]
	if r, ok := d["ratio"]; ok {
		budget += fmt.Sprintf(" (retries up to %v of requests)", r)
	}
	s := fmt.Sprintf("%v attempts, %s from %v capped at %v, %s", d["attempts"], jitter, d["base"], d["cap"], budget)
	if t, ok := d["attempt_timeout"]; ok {
		s += fmt.Sprintf(", attempt timeout %v", t)
	}
	return s
}

// fieldValue is a scenario's parameter as a flag.Value.
func fieldValue(f sim.Field) flag.Value {
	switch v := f.Value.(type) {
	case *int:
		return (*intValue)(v)
	case *float64:
		return (*floatValue)(v)
	case *time.Duration:
		return (*durationValue)(v)
	case *[]int:
		return &intsValue{name: f.Name, v: v}
	}
	panic(fmt.Sprintf("unherd: scenario parameter %q holds a %T", f.Name, f.Value))
}

// The flag package's values for these types are not exported; these
// read and write them the same way.
type (
	intValue      int
	floatValue    float64
	durationValue time.Duration
)

func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("parse error")
	}
	*v = intValue(n)
	return nil
}
func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *floatValue) Set(s string) error {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("parse error")
	}
	*v = floatValue(n)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	*v = durationValue(d)
	return nil
}

// intsValue is a list parameter: sim.ParseInts's form.
type intsValue struct {
	name string
	v    *[]int
}

func (l *intsValue) String() string {
	if l == nil || l.v == nil {
		return ""
	}
	return sim.FormatInts(*l.v)
}

func (l *intsValue) Set(s string) error {
	v, err := sim.ParseInts(l.name, s)
	if err != nil {
		return err
	}
	*l.v = v
	return nil
}
