package sim

import (
	"context"
	"fmt"
)

// scenario is a Scenario described by its fields: every scenario of the
// package is one, made by define.
type scenario struct {
	name, population, describe string
	params                     func() Params
	run                        func(context.Context, Params, Options) (*Result, error)
	// seeds, if set, runs the scenario on n seeds and merges the runs
	// itself, because its claims judge percentiles that one seed's
	// samples cannot carry: RunSeeds calls it instead of merging
	// per-seed results.
	seeds func(ctx context.Context, p Params, o Options, n int) (*Result, error)
}

// Name implements Scenario.
func (s *scenario) Name() string { return s.name }

// Describe implements Scenario.
func (s *scenario) Describe() string { return s.describe }

// Population implements Scenario.
func (s *scenario) Population() string { return s.population }

// Params implements Scenario.
func (s *scenario) Params() Params { return s.params() }

// Run implements Scenario.
func (s *scenario) Run(ctx context.Context, p Params, o Options) (*Result, error) {
	return s.run(ctx, p, o)
}

// define returns the scenario called name, of the given population and
// description, whose parameters are a P: params returns the published
// defaults, and Run calls run with its parameters once they are a P that
// Validate accepts.
func define[P Params](name, population, describe string, params func() P, run func(context.Context, P, Options) (*Result, error)) *scenario {
	return &scenario{name: name, population: population, describe: describe,
		params: func() Params { return params() },
		run: func(ctx context.Context, ps Params, o Options) (*Result, error) {
			p, err := validParams[P](name, ps)
			if err != nil {
				return nil, err
			}
			return run(ctx, p, o)
		}}
}

// validParams returns ps as the P of the scenario called name, once its
// Validate accepts it.
func validParams[P Params](name string, ps Params) (P, error) {
	p, ok := ps.(P)
	if !ok {
		return p, fmt.Errorf("%w: %s got %T", ErrInvalidParams, name, ps)
	}
	return p, p.Validate()
}
