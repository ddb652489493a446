package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/unherd/unherd/internal/quantile"
)

// minBeyond is the fewest samples beyond a percentile that a verdict on
// it rests on.
const minBeyond = 20

// hedgeSeeds runs the hedge scenario on n seeds and judges its claims on
// the latencies of all seeds pooled (each strategy's requests of every
// seed together), since its claims rest on the p99.9. The table and
// charts show the pooled percentiles (the charts with the p90 as well);
// each claim's text gives the pooled figures, then the per-seed medians
// and ranges. When one seed holds at least minBeyond samples beyond the
// p99.9, a claim also holds only if it holds on every seed; with fewer,
// a seed's own verdict is too noisy to overrule the pooled one, and the
// seeds that disagree are named as such.
func init() {
	hedgeScenario.seeds = func(ctx context.Context, ps Params, o Options, n int) (*Result, error) {
		p, err := validParams[*hedgeParams]("hedge", ps)
		if err != nil {
			return nil, err
		}
		return hedgeSeeds(ctx, p, o, n)
	}
}

func hedgeSeeds(ctx context.Context, p *hedgeParams, o Options, n int) (*Result, error) {
	per, err := eachSeed(o, n, func(o Options) ([]hedgeOutcome, error) { return runHedge(ctx, p, o) })
	if err != nil {
		return nil, err
	}
	results := make([]*Result, n)
	for k := range per {
		results[k] = hedgeResult(p, per[k])
	}
	merged := mergeSeeds(o.Seed, results)
	pooled := poolOutcomes(per)
	res := hedgeResult(p, pooled)
	res.Seeds = merged.Seeds
	for i := range res.Charts {
		addP90(&res.Charts[i], pooled[i*len(hedgeStrategies):], n)
	}
	total := len(pooled[0].Latencies)
	beyond := total / 1000 // samples beyond the p99.9
	enough := beyond/n >= minBeyond
	for i := range res.Claims {
		c, m := &res.Claims[i], merged.Claims[i]
		c.Seeds, c.Differs, c.Pooled = m.Seeds, m.Differs, !enough
		c.Measured = fmt.Sprintf("%d seeds pooled (%d requests per strategy, %d beyond the p99.9): %s; per seed: %s",
			n, total, beyond, c.Measured, m.Measured)
		if enough {
			c.Holds = c.Holds && m.Holds
		}
	}
	return res, nil
}

// poolOutcomes pools the outcomes of several seeds run by run: latencies
// together (percentiles of the pool), extra work and delays averaged,
// suspended only if every seed suspended.
func poolOutcomes(per [][]hedgeOutcome) []hedgeOutcome {
	out := make([]hedgeOutcome, len(per[0]))
	n := float64(len(per))
	for i := range out {
		o := hedgeOutcome{Fleet: per[0][i].Fleet, Strategy: per[0][i].Strategy, Suspended: true}
		var delay time.Duration
		for _, seed := range per {
			s := seed[i]
			o.Latencies = append(o.Latencies, s.Latencies...)
			o.Unfinished += s.Unfinished
			o.ExtraSent += s.ExtraSent / n
			o.ExtraExecuted += s.ExtraExecuted / n
			delay += s.Delay
			o.Suspended = o.Suspended && s.Suspended
		}
		o.Delay = delay / time.Duration(len(per))
		slices.Sort(o.Latencies)
		o.P50, o.P99, o.P999 = quantile.Exact(o.Latencies, 0.5), quantile.Exact(o.Latencies, 0.99), quantile.Exact(o.Latencies, 0.999)
		out[i] = o
	}
	return out
}

// addP90 adds the p90 to a hedge chart's series (50, 99, 99.9), from the
// outcomes of n seeds pooled that the series were drawn from.
func addP90(c *Chart, outs []hedgeOutcome, n int) {
	for s := range c.Series {
		if s >= len(outs) || len(c.Series[s].X) != 3 {
			return
		}
		p90 := round(ms(quantile.Exact(outs[s].Latencies, 0.9)), 1)
		ser := &c.Series[s]
		ser.X = []float64{ser.X[0], 90, ser.X[1], ser.X[2]}
		ser.Y = []float64{ser.Y[0], p90, ser.Y[1], ser.Y[2]}
	}
	c.Title += fmt.Sprintf(" (%d seeds pooled)", n)
}
