package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/unherd/unherd/cmd/unherd/internal/param"
	"github.com/unherd/unherd/cmd/unherd/internal/policy"
	"github.com/unherd/unherd/sim"
)

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
	// A scenario that runs a user's policy beside its rows takes one.
	pp, takesPolicy := p.(sim.PolicyParams)
	var file *string
	if takesPolicy {
		file = fs.String("policy", "", "YAML or JSON `file` holding a retry policy to run as a row of its own, \"yours\" (docs/policy.md; timeouts.attempt is its callers' timeout); - reads standard input")
	}
	for _, f := range p.Fields() {
		if fs.Lookup(f.Name) != nil || slices.Contains(reserved, f.Name) {
			return fmt.Errorf("sim %s: the scenario defines flag -%s, which unherd sim uses itself", name, f.Name)
		}
		fs.Var(param.Flag(f), f.Name, f.Usage)
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
	if takesPolicy && *file != "" {
		fname, data, err := e.readPolicy(*file)
		if err != nil {
			return fmt.Errorf("sim %s: %w", name, err)
		}
		pol, err := policy.ParseFor(fname, data, name)
		if err != nil {
			return err // already file:line: field: message
		}
		if err := pp.SetPolicy(pol); err != nil {
			return fmt.Errorf("sim %s: %w", name, err)
		}
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
