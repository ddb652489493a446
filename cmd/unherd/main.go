// Command unherd runs the simulator's scenarios and shows what retry
// policies do to a dependency that fails.
//
//	unherd report [--out DIR] [--seed N]
//	unherd sim NAME [flags] [--json] [--seed N]
//	unherd whatif --policy FILE [--json]
//	unherd help
//
// report runs every scenario at sizes that finish within two minutes on
// two cores, prints each table and the published claims beside what was
// measured, and writes report.md, PNG and SVG charts and CSV files into
// DIR (default ./report). sim runs one scenario at its published size
// (its parameters are flags: unherd sim NAME -h lists them); --json
// prints one JSON object and nothing else on standard output. whatif runs
// a retry policy from a YAML or JSON file through the outage and storm
// scenarios beside unherd's defaults.
//
// Exit codes: 0 on success, 1 when a run or a file fails, 2 for a usage
// error (an unknown command, scenario or flag, a bad flag value). A
// progress bar appears on standard error when it is a terminal and a run
// takes longer than a second; nothing of it appears otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/unherd/unherd/cmd/unherd/internal/progress"
	"github.com/unherd/unherd/sim"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runContext(ctx, newEnv(os.Stdout, os.Stderr), os.Args[1:])
	stop()
	os.Exit(code)
}

// run runs the command line args (without the program name) and returns
// the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), newEnv(stdout, stderr), args)
}

// env is what a command reads and writes besides its arguments: the
// output streams, the scenarios, and the clock. Tests replace the
// scenarios with fakes.
type env struct {
	stdout, stderr io.Writer
	// scenarios lists the scenarios, sorted by name.
	scenarios func() []sim.Scenario
	// whatIf runs a policy through outage and storm.
	whatIf func(context.Context, sim.Policy, sim.Options) ([]*sim.Result, error)
	// now reads the wall clock, for timings and the progress bar.
	now func() time.Time
	// bars says whether to draw progress bars on stderr.
	bars bool
}

func newEnv(stdout, stderr io.Writer) *env {
	return &env{
		stdout: stdout, stderr: stderr,
		scenarios: sim.Scenarios,
		whatIf:    sim.WhatIf,
		now:       time.Now,
		bars:      progress.IsTerminal(stderr),
	}
}

// lookup finds the scenario called name.
func (e *env) lookup(name string) (sim.Scenario, bool) {
	for _, s := range e.scenarios() {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// known lists the scenario names for error messages.
func (e *env) known() string {
	var names []string
	for _, s := range e.scenarios() {
		names = append(names, s.Name())
	}
	if len(names) == 0 {
		return "no scenarios are registered"
	}
	sort.Strings(names)
	return "known: " + strings.Join(names, ", ")
}

// usageError is a mistake on the command line: exit code 2.
type usageError struct {
	msg string
	// help is the command that explains what would be right.
	help string
}

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), help: "unherd help"}
}

// errHelp means help was asked for and printed: exit code 0.
var errHelp = errors.New("help requested")

func runContext(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		e.usage(e.stderr)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "help", "-h", "-help", "--help":
		e.usage(e.stdout)
		return exitOK
	case "report":
		err = e.report(ctx, rest)
	case "sim":
		err = e.sim(ctx, rest)
	case "whatif":
		err = e.whatif(ctx, rest)
	default:
		err = usagef("unknown command %q (want report, sim, whatif or help)", cmd)
	}
	var u *usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &u):
		fmt.Fprintf(e.stderr, "unherd: %v\nRun '%s' for usage.\n", err, u.help)
		return exitUsage
	default:
		fmt.Fprintf(e.stderr, "unherd: %v\n", err)
		return exitFailure
	}
}

func (e *env) usage(w io.Writer) {
	fmt.Fprint(w, `unherd runs the simulator's scenarios: what retries, backoff, jitter,
budgets and hedging do to a dependency that fails.

Usage:
  unherd report [--out DIR] [--seed N]         run every scenario at report sizes; print the
                                               tables; write report.md, charts and CSV into DIR
  unherd sim NAME [flags] [--json] [--seed N]  run one scenario; 'unherd sim NAME -h' lists its flags
  unherd whatif --policy FILE [--json]         run a retry policy (YAML or JSON) through the
                                               outage and storm scenarios beside unherd's defaults
  unherd help                                  print this help

Scenarios:
`)
	list := e.scenarios()
	if len(list) == 0 {
		fmt.Fprintln(w, "  (none registered)")
	}
	for _, s := range list {
		fmt.Fprintf(w, "  %-10s %s\n", s.Name(), wrap(s.Describe(), 64, strings.Repeat(" ", 13)))
	}
	fmt.Fprint(w, `
Exit codes: 0 success, 1 a run or file failed, 2 a usage error.
`)
}

// wrap breaks s into lines of at most width runes at spaces, indenting
// every line after the first.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(word) > width {
				b.WriteString("\n" + indent)
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
