package overload

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/limit"
)

// The workload of the run.
const (
	median   = 20 * time.Millisecond // median service time
	sigma    = 0.5                   // of the service time's log: p99 about 3.2x the median
	timeout  = time.Second           // each caller's timeout
	critical = 0.2                   // share of calls marked critical
	maxCalls = 4000                  // calls in flight at most; more are refused by the harness
)

// Scale is the size of a run, and the goals its judged rows are held to.
type Scale struct {
	Name     string
	Workers  int
	PhaseLen time.Duration
	Goals    Goals
}

var (
	// SuiteScale runs in the suites: 2.5 s per phase, 10 s per row.
	SuiteScale = Scale{Name: "suite", Workers: 8, PhaseLen: 2500 * time.Millisecond, Goals: SuiteGoals}
	// FullScale is the run, 8 s per phase, about 35 s per row.
	// Its baseline holds about 12,000 requests in the handler at once,
	// each with its stream or connection: the process needs that many
	// file descriptors when each has its own.
	FullScale = Scale{Name: "full", Workers: 8, PhaseLen: 8 * time.Second, Goals: FullGoals}
)

// ScaleFromEnv returns FullScale if UNHERD_RELIABILITY_OVERLOAD is "full",
// SuiteScale otherwise.
func ScaleFromEnv() Scale {
	if os.Getenv("UNHERD_RELIABILITY_OVERLOAD") == "full" {
		return FullScale
	}
	return SuiteScale
}

// Seed returns the seed of the reliability suites' random draws: 1, or
// $UNHERD_RELIABILITY_SEED, to run them over other draws.
func Seed() (uint64, error) {
	s := os.Getenv("UNHERD_RELIABILITY_SEED")
	if s == "" {
		return 1, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("UNHERD_RELIABILITY_SEED=%q: %v; want a non-negative integer", s, err)
	}
	return n, nil
}

// Row is one protection of a run's table.
type Row struct {
	Name string
	// HonoursContext is the Server's knob: its handler leaves the queue,
	// and stops working, when the request's context is done.
	HonoursContext bool
	// Judged rows are checked against the scale's goals; the others are
	// baselines.
	Judged bool
	// Start serves s on loopback behind the row's protection, its handler
	// calling s.Serve, closes that server when the test ends, and
	// returns the Caller that calls it through the protocol's client.
	// state, if not nil, describes the protection's state for the log
	// (a limiter's current limit).
	Start func(t *testing.T, s *Server) (do Caller, state func() string)
}

// LimiterState is a Row's state for a protection that uses l.
func LimiterState(l *limit.Limiter) func() string {
	return func() string { return fmt.Sprintf("limit %d, %d in flight", l.Limit(), l.InFlight()) }
}

// Run runs every row through the phases at scale sc, each in a subtest
// of t, logs what each phase measured, checks the judged rows against
// sc.Goals, and returns the table of the run (also logged).
func Run(t *testing.T, sc Scale, seed uint64, rows []Row) string {
	var lines, notes []string
	out := jsonRun{Scale: sc.Name, Seed: seed, Workers: sc.Workers, PhaseSeconds: sc.PhaseLen.Seconds(), Timeout: timeout.Seconds()}
	for _, r := range rows {
		t.Run(r.Name, func(t *testing.T) {
			res := runRow(t, sc, seed, r)
			out.Rows = append(out.Rows, newJSONRow(r, res))
			if len(res) > 0 {
				out.Capacity = res[0].capacity
			}
			if why := harnessFailed(res); why != "" {
				notes = append(notes, fmt.Sprintf("The machine could not run the harness for %q as designed (%s): its figures measure the machine too.", r.Name, why))
			}
			for _, p := range res {
				lines = append(lines, p.row(r.Name))
				t.Log(p.row(r.Name))
				t.Logf("%s, %s: calls started late by %v at p99; %d pieces of work, %d for callers gone; work took %.2fx its drawn service time", r.Name, p.phase.name, p.lag.Round(time.Millisecond), p.workStarted, p.workForGone, p.stretch)
				if p.state != "" {
					t.Logf("%s: at the end of %s: %s", r.Name, p.phase.name, p.state)
				}
			}
			if r.Judged {
				judge(t, res, sc.Goals)
			}
		})
	}
	table := fmt.Sprintf("%s scale: %d workers, %v per phase, seed %d.\n\n%s\n%s", sc.Name, sc.Workers, sc.PhaseLen, seed, tableHeader, strings.Join(lines, "\n"))
	if len(notes) > 0 {
		table += "\n\n" + strings.Join(notes, "\n")
	}
	t.Logf("overload:\n%s", table)
	if path := os.Getenv(JSONEnv); path != "" {
		if err := writeJSON(path, out); err != nil {
			t.Errorf("writing the results as JSON: %v", err)
		}
	}
	return table
}

// runRow runs one row through the phases and measures them.
func runRow(t *testing.T, sc Scale, seed uint64, r Row) []phaseResult {
	srv := newServer(sc.Workers, median, sigma, r.HonoursContext, seed)
	do, state := r.Start(t, srv)
	// Cleanups run last in, first out: stop the work, then close the
	// row's server.
	t.Cleanup(srv.halt)
	o := offer{
		capacity:    srv.capacity(),
		phaseLen:    sc.PhaseLen,
		timeout:     timeout,
		critical:    critical,
		maxInFlight: maxCalls,
		seed:        seed,
	}
	states := make([]string, len(phases))
	if state != nil {
		// Sample the protection's state at each phase's end, from a
		// goroutine that ends with the run.
		done := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			begin := time.Now()
			for i := range phases {
				select {
				case <-time.After(time.Until(begin.Add(time.Duration(i+1) * sc.PhaseLen))):
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
	start, calls, err := o.run(do)
	if err != nil {
		t.Fatal(err)
	}
	srv.halt()
	works := srv.recorded()
	t.Logf("%s: %d calls, %d requests reached the handler, at most %d in it at once; capacity %.0f/s (%d workers, mean service %v)",
		r.Name, len(calls), len(works), srv.peak.Load(), srv.capacity(), sc.Workers, srv.meanService().Round(100*time.Microsecond))
	res := measure(start, sc.PhaseLen, srv.capacity(), calls, works)
	for i := range res {
		res[i].state = states[i]
	}
	return res
}
