// Command unherd runs the simulator's scenarios and shows what retry
// policies do to a dependency that fails.
//
//	unherd report [--out DIR] [--seed N] [--seeds N] [--workers N] [--quiet] [--cpuprofile FILE]
//	unherd sim NAME [flags] [--json] [--seed N] [--seeds N] [--workers N] [--quiet]
//	unherd whatif --policy FILE|- [--json] [--seed N] [--workers N] [--quiet]
//	unherd vet [--json] [--fix] [--timeout D] [PACKAGES]
//	unherd demo payments [--payments N] [--drop P] [--seed N] [--redis ADDR | --postgres DSN]
//	unherd serve [--addr HOST:PORT] [--export DIR]
//	unherd help
//	unherd --version
//
// report runs every scenario at its published size on five
// seeds (--seed and the four after it), prints each table (medians over
// the seeds) and the verdict on every published claim (a claim holds only
// if it holds on every seed; its figures show the range over the seeds),
// and writes report.md, PNG and SVG charts and CSV files into DIR (default
// ./report), which it checks before running anything. sim runs one
// scenario at its published size on one seed, or on --seeds of them judged
// as the report judges (its parameters are flags: unherd sim NAME -h lists
// them); --json prints one JSON object and nothing else on standard
// output. unherd sim metastable runs Huang et al.'s retry experiment (a
// short cut to a server's CPU that leaves it down for good) and its
// tipping-point map; with --policy FILE it runs a retry policy as a row
// of its own, its callers timing out after its timeouts.attempt. whatif
// judges a retry policy from a YAML or JSON file (at most 1 MiB; - reads
// standard input; the format is in docs/policy.md) in the outage and
// storm scenarios beside unherd's default, by goodput and load, and gives
// each one's margin against a metastable failure: the smallest trigger
// that leaves the metastable scenario's server down. vet runs the retry checks of
// package unherdvet over Go packages (each path in its own module) without
// compiling them or running cgo; it exits 1 when it finds something, and
// 2, never 0, when a package could not be checked and nothing was found
// (unherd vet -h); --fix applies the mechanical rewrites. demo payments
// starts a payments server on loopback that drops a share of its responses
// after the charge commits, pays through unherd's HTTP client with and
// without idempotency keys, and counts the charges. serve serves the
// what-if page, on which the simulator, compiled to WebAssembly, judges a
// policy in the browser: it listens on --addr (default 127.0.0.1:8080,
// loopback only; port 0 picks a free one), prints the page's URL as its
// first line and serves until interrupted; --export DIR writes the page as
// static files instead.
//
// Progress goes to standard error once a run has taken a second: a bar on
// a terminal, a line with the scenario and the percent done every few
// seconds otherwise; --quiet turns it off. Exit codes: 0 on success, 1
// when a run or a file fails, 2 for a usage error (an unknown command,
// scenario or flag, a bad flag value), 130 when interrupted (Ctrl-C or
// SIGTERM); vet adds 2 for packages it could not check (unherd vet -h).
//
// The command is built with profile-guided optimisation: go build, go run
// and go install use default.pgo, a CPU profile of the report at its
// default sizes (report --cpuprofile writes one), which
// scripts/pgo.sh regenerates. A stale profile only makes the build a
// little less fast, never wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/unherd/unherd/cmd/unherd/internal/progress"
	"github.com/unherd/unherd/sim"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitNotChecked is vet's code for packages it could not check.
	exitNotChecked = 2
)

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs args as the command does: Ctrl-C (SIGINT) and SIGTERM
// cancel the run. It returns the exit code.
func runMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, newEnv(stdout, stderr), args)
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
	stdin          io.Reader
	stdout, stderr io.Writer
	// scenarios lists the scenarios, sorted by name.
	scenarios func() []sim.Scenario
	// whatIf judges a policy in outage and storm.
	whatIf func(context.Context, sim.Policy, sim.Options) (*sim.WhatIfReport, error)
	// now reads the wall clock, for timings and the progress bar.
	now func() time.Time
	// bars says whether stderr is a terminal: progress is drawn as a bar
	// there, and written as lines otherwise.
	bars bool
	// buildInfo reads the binary's build information, for --version.
	buildInfo func() (*debug.BuildInfo, bool)
}

func newEnv(stdout, stderr io.Writer) *env {
	return &env{
		stdin:  os.Stdin,
		stdout: stdout, stderr: stderr,
		scenarios: sim.Scenarios,
		whatIf:    sim.WhatIf,
		now:       time.Now,
		bars:      progress.IsTerminal(stderr),
		buildInfo: debug.ReadBuildInfo,
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

// exitError ends a command with an exit code of its own after printing
// err.
type exitError struct {
	code int
	err  error
}

func (x *exitError) Error() string { return x.err.Error() }
func (x *exitError) Unwrap() error { return x.err }

// errHelp means help was asked for and printed: exit code 0.
var errHelp = errors.New("help requested")

// command is one subcommand: its name, its line in the help, and what
// runs it. A new subcommand adds itself to commands (from its own file's
// init, through addCommand) and appears in the help and the dispatch.
type command struct {
	name     string
	synopsis string // the usage line after "unherd "
	summary  string // what it does, for the help; wrapped to fit
	run      func(e *env, ctx context.Context, args []string) error
}

// commands are the subcommands in help order.
var commands = []command{
	{"report", reportSynopsis, "run every scenario over several seeds at published sizes; print the tables and the verdicts on the published claims; write report.md, charts and CSV into DIR", (*env).report},
	{"sim", "sim NAME [flags] [--json] [--seed N] [--seeds N] [--workers N] [--quiet]", "run one scenario at its published size, on one seed or several (--seeds); 'unherd sim NAME -h' lists its flags", (*env).sim},
	{"whatif", whatifSynopsis, "judge a retry policy (YAML or JSON; - reads standard input) in the outage and storm scenarios beside unherd's default, with each one's margin against a metastable failure", (*env).whatif},
}

// addCommand adds c to the commands, for subcommands defined in files of
// their own.
func addCommand(c command) { commands = append(commands, c) }

// exitInterrupted is the exit code after Ctrl-C, as a shell reports a
// process killed by SIGINT (128 + 2).
const exitInterrupted = 130

func runContext(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		e.usage(e.stderr)
		return exitUsage
	}
	var err error
	cmd, rest := args[0], args[1:]
	switch i := slices.IndexFunc(commands, func(c command) bool { return c.name == cmd }); {
	case cmd == "help" || cmd == "-h" || cmd == "-help" || cmd == "--help":
		e.usage(e.stdout)
		return exitOK
	case cmd == "version" || cmd == "-version" || cmd == "--version":
		fmt.Fprintln(e.stdout, e.version())
		return exitOK
	case i >= 0:
		err = commands[i].run(e, ctx, rest)
	default:
		names := make([]string, len(commands))
		for i, c := range commands {
			names[i] = c.name
		}
		err = usagef("unknown command %q (want %s or help)", cmd, strings.Join(names, ", "))
	}
	var u *usageError
	var x *exitError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintln(e.stderr, "unherd: interrupted")
		return exitInterrupted
	case errors.As(err, &x):
		fmt.Fprintf(e.stderr, "unherd: %v\n", err)
		return x.code
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
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  unherd %s\n      %s\n", c.synopsis, wrap(c.summary, 70, "      "))
	}
	fmt.Fprint(w, `  unherd help
      print this help
  unherd --version
      print the module version and the VCS revision it was built from

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
Progress goes to standard error: a bar on a terminal, a line every few
seconds otherwise; --quiet turns it off.

Exit codes: 0 success, 1 a run or file failed, 2 a usage error,
130 interrupted (Ctrl-C).
`)
}

// version is the --version line: the module's version and the VCS
// revision, time and state the binary was built from, as far as the build
// recorded them ("(devel)" and no revision for go run or a build outside
// a repository).
func (e *env) version() string {
	bi, ok := e.buildInfo()
	if !ok || bi == nil {
		return "unherd (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	s := "unherd " + v
	var rev, at, modified string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			at = kv.Value
		case "vcs.modified":
			modified = kv.Value
		}
	}
	if rev != "" {
		s += ", revision " + rev
		if at != "" {
			s += " of " + at
		}
		if modified == "true" {
			s += " with uncommitted changes"
		}
	} else {
		s += ", no VCS revision recorded"
	}
	if bi.GoVersion != "" {
		s += ", built with " + bi.GoVersion
	}
	return s
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
