package sim

import (
	"context"
	"fmt"
	"sync"
)

// RunSeeds runs scenario s on n seeds, o.Seed to o.Seed+n-1, concurrently
// (each run still spreads its own work over o.Workers goroutines), and
// merges the results: every numeric table cell is the median over the
// seeds; charts come from the first seed; a claim holds only if it holds
// on every seed, its figures are medians with the range over the seeds
// (for a claim built without figures, the numbers of its text, when the
// seeds' texts agree otherwise), and Differs lists the seeds on which it
// does not hold. n below 2 is one
// run of s. The merge is by seed index: the same seeds give the same
// result.
func RunSeeds(ctx context.Context, s Scenario, p Params, o Options, n int) (*Result, error) {
	if n < 2 {
		return s.Run(ctx, p, o)
	}
	if sc, ok := s.(*scenario); ok && sc.seeds != nil {
		return sc.seeds(ctx, p, o, n)
	}
	results, err := eachSeed(o, n, func(o Options) (*Result, error) { return s.Run(ctx, p, o) })
	if err != nil {
		return nil, err
	}
	return mergeSeeds(o.Seed, results), nil
}

// eachSeed runs run on seeds o.Seed to o.Seed+n-1 concurrently, with
// their progress summed into o.Progress, and returns the results by seed.
func eachSeed[R any](o Options, n int, run func(o Options) (R, error)) ([]R, error) {
	out := make([]R, n)
	errs := make([]error, n)
	progress := seedProgress(o.Progress, n)
	var wg sync.WaitGroup
	for k := range n {
		ok := o
		ok.Seed = o.Seed + uint64(k)
		ok.Progress = progress(k)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[k], errs[k] = run(ok)
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", o.Seed+uint64(k), err)
		}
	}
	return out, nil
}

// seedProgress returns, for each of n runs on their own seeds, a
// progress function that reports the runs' sum to report (nil if report
// is nil). A seed that has not reported yet counts as much work as the
// last one reported.
func seedProgress(report func(done, total int), n int) func(k int) func(done, total int) {
	if report == nil {
		return func(int) func(int, int) { return nil }
	}
	var mu sync.Mutex
	done, total := make([]int, n), make([]int, n)
	return func(k int) func(int, int) {
		return func(d, t int) {
			mu.Lock()
			defer mu.Unlock()
			done[k], total[k] = d, t
			var sd, st int
			for i := range n {
				sd, st = sd+done[i], st+total[i]
			}
			for i := range n {
				if total[i] == 0 {
					st += t
				}
			}
			report(sd, st)
		}
	}
}

// mergeSeeds merges results of the same scenario and parameters on seeds
// first, first+1, ....
func mergeSeeds(first uint64, rs []*Result) *Result {
	out := *rs[0]
	seeds := make([]uint64, len(rs))
	for k := range rs {
		seeds[k] = first + uint64(k)
	}
	out.Seeds = seeds
	out.Charts = mergeCharts(rs)
	out.Rows = make([]Row, len(rs[0].Rows))
	for i, row := range rs[0].Rows {
		m := Row{}
		for key, v := range row {
			m[key] = v
			if _, ok := number(v); !ok {
				continue
			}
			vals := make([]float64, 0, len(rs))
			for _, r := range rs {
				if i < len(r.Rows) {
					if x, ok := number(r.Rows[i][key]); ok {
						vals = append(vals, x)
					}
				}
			}
			med := median(vals)
			if _, isInt := v.(int); isInt {
				m[key] = int(med)
			} else if _, isInt64 := v.(int64); isInt64 {
				m[key] = int64(med)
			} else {
				m[key] = med
			}
		}
		out.Rows[i] = m
	}
	out.Claims = make([]Claim, len(rs[0].Claims))
	for i := range rs[0].Claims {
		var per []Claim
		for _, r := range rs {
			if i < len(r.Claims) {
				per = append(per, r.Claims[i])
			}
		}
		out.Claims[i] = mergeClaims(seeds, per)
	}
	return &out
}

// number returns v as a float64 if it is one of a Row's numeric types.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}
