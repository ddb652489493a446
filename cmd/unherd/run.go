package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/unherd/unherd/cmd/unherd/internal/progress"
	"github.com/unherd/unherd/cmd/unherd/internal/table"
	"github.com/unherd/unherd/sim"
)

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

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
