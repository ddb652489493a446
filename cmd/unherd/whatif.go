package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/unherd/unherd/cmd/unherd/internal/policy"
	"github.com/unherd/unherd/cmd/unherd/internal/table"
	"github.com/unherd/unherd/sim"
)

// whatifSynopsis is the whatif command's usage line after "unherd ",
// in the help and in its own -h: every flag it defines.
const whatifSynopsis = "whatif --policy FILE|- [--json] [--seed N] [--workers N] [--quiet]"

func (e *env) whatif(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	file := fs.String("policy", "", "YAML or JSON `file` holding the retry policy (attempts, base, cap, jitter, budget; docs/policy.md); - reads standard input")
	asJSON := fs.Bool("json", false, "print one JSON object and nothing else: the policies under policy and default, the verdicts, and results whose params are the scenarios' own")
	var rf runFlags
	rf.register(fs)
	if err := e.parse(fs, args, "unherd "+whatifSynopsis); err != nil {
		return err
	}
	if *file == "" {
		return usagef("whatif: --policy FILE is required (a YAML or JSON file with attempts, base, cap, jitter, budget: see docs/policy.md)")
	}
	name, data, err := e.readPolicy(*file)
	if err != nil {
		return fmt.Errorf("whatif: %w", err)
	}
	pol, err := policy.ParseFor(name, data, sim.UseWhatIf)
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
	for _, v := range rep.Comparisons {
		fmt.Fprintf(w, "  %-6s  %s\n", v.Population, v.Summary)
	}
	if len(rep.Margins) > 0 {
		fmt.Fprintln(w, "\nMargin against a metastable failure (unherd sim metastable's server: callers")
		fmt.Fprintln(w, "time out after 3 s and retry through the policy; a cut to its CPU, then the")
		fmt.Fprintln(w, "smallest such trigger that leaves it down for good):")
		for i, m := range rep.Margins {
			who := "yours"
			if i > 0 {
				who = "default"
			}
			fmt.Fprintf(w, "  %-7s  %s\n", who, m.Summary)
		}
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
		{"goodput from the outage on, % of fault-free", func(i sim.Impact) float64 { return i.GoodputPct }},
		{"work wasted on callers gone, %", func(i sim.Impact) float64 { return i.WastedPct }},
	}
	for _, v := range rep.Comparisons {
		side.Columns = append(side.Columns, v.Population+" yours", v.Population+" default")
	}
	for _, r := range rows {
		row := sim.Row{"measure": r.name}
		for _, v := range rep.Comparisons {
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
	fmt.Fprintln(w, "Goodput is successful calls per second from the outage's start to the")
	fmt.Fprintln(w, "run's end over those per second before it: what the callers got. The")
	fmt.Fprintln(w, "verdicts judge it, never a share of calls, whose number the policy sets.")
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
	budget := map[string]string{"none": "no budget", "token": "a token-bucket budget"}[fmt.Sprint(d["budget"])]
	if b, ok := d["budget"].(map[string]any); ok {
		budget = fmt.Sprintf("a ratio budget (retries up to %v of requests)", b["ratio"])
	}
	s := fmt.Sprintf("%v attempts, %s from %v capped at %v, %s", d["attempts"], jitter, d["base"], d["cap"], budget)
	if t, ok := d["timeouts"].(map[string]any); ok {
		s += fmt.Sprintf(", a timeout of %v on each attempt", t["attempt"])
	}
	return s
}
