package sim

import (
	"context"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
)

// defaultSpec is the policy a zero retry.Config builds: 3 attempts, full
// jitter from 50 ms capped at 20 s, and the AWS standard-mode token bucket.
func defaultSpec() policySpec {
	return policySpec{name: "unherd default", attempts: retry.DefaultMaxAttempts,
		sched: backoff.Schedule{}, budget: budgetToken}
}

// whatIfColumns are the columns of both what-if tables.
var whatIfColumns = []string{"population", "policy", "peak_rps", "amplification", "success_pct"}

// WhatIf runs a user's retry policy through the outage and storm scenarios
// at their default sizes, beside unherd's default policy (3 attempts, full
// jitter from 50 ms capped at 20 s, a token-bucket budget), for a closed
// population and an open stream. It returns the outage result, then the
// storm result; each row gives the policy, the peak load (attempts per
// second, highest 100 ms bucket), the amplification (attempts per call,
// during the outage for outage) and the share of calls that succeeded.
// The results carry no claims: they compare two policies, not a source.
// The simulated dependency fails fast, so p.AttemptTimeout never fires.
func WhatIf(ctx context.Context, p Policy, o Options) ([]*Result, error) {
	return whatIf(ctx, p, o, defaultOutageParams(), defaultStormParams())
}

// whatIf is WhatIf at the given sizes.
func whatIf(ctx context.Context, p Policy, o Options, op *OutageParams, sp *StormParams) ([]*Result, error) {
	user, err := specOf(p)
	if err != nil {
		return nil, err
	}
	specs := []policySpec{user, defaultSpec()}
	policy := p.Fields()

	ores, orows, err := runOutage(ctx, op, specs, o)
	if err != nil {
		return nil, err
	}
	outage := &Result{Scenario: "outage", Population: ores.Population, Params: op.Values(),
		Columns: append(append([]string(nil), whatIfColumns...), "outage_rps", "recover_s", "failed"),
		Charts:  ores.Charts}
	outage.Params["policy"] = policy
	for _, r := range orows {
		outage.Rows = append(outage.Rows, Row{"population": r.population, "policy": r.policy,
			"peak_rps": round(r.peak, 0), "amplification": round(r.amp, 2),
			"success_pct": round(100*r.success, 2), "outage_rps": round(r.during, 0),
			"recover_s": round(r.recover, 1), "failed": r.failed})
	}

	_, srows, err := runStorm(ctx, sp, specs, o)
	if err != nil {
		return nil, err
	}
	storm := &Result{Scenario: "storm", Population: "closed and open", Params: sp.Values(),
		Columns: append(append([]string(nil), whatIfColumns...), "load_rps")}
	storm.Params["policy"] = policy
	for _, r := range srows {
		storm.Rows = append(storm.Rows, Row{"population": r.population, "policy": r.policy,
			"peak_rps": round(r.peak, 0), "amplification": round(r.amp, 2),
			"success_pct": round(100*r.success, 2), "load_rps": round(r.load, 1)})
	}
	return []*Result{outage, storm}, nil
}
