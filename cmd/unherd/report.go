package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/unherd/unherd/cmd/unherd/internal/progress"
	"github.com/unherd/unherd/cmd/unherd/internal/report"
)

// reportSynopsis is the report command's usage line after "unherd ",
// in the help and in its own -h: every flag it defines.
const reportSynopsis = "report [--out DIR] [--seed N] [--seeds N] [--workers N] [--quiet] [--cpuprofile FILE]"

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
