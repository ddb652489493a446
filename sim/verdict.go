package sim

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Figure is one number a claim's verdict rests on: on one seed its value;
// over several seeds the median, with the least and the greatest value
// any seed gave.
type Figure struct {
	Value float64 `json:"value"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	// seeds holds every seed's value once merged, for the median.
	seeds []float64
}

// Format prints the value with the verb's precision and, when the seeds
// disagree, the range after it: "259 [240-281]".
func (f Figure) Format(s fmt.State, verb rune) {
	p, ok := s.Precision()
	if !ok {
		p = -1
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', p, 64) }
	fmt.Fprint(s, num(f.Value))
	if lo, hi := num(f.Min), num(f.Max); lo != hi {
		fmt.Fprintf(s, " [%s-%s]", lo, hi)
	}
}

// claim builds a Claim whose Measured text is format with the figures
// in place of its verbs (one %f verb, with any precision, per figure), so
// that merging the claim over seeds can print each figure's spread.
func claim(source, text string, holds bool, format string, figures ...float64) Claim {
	c := Claim{Source: source, Claim: text, Holds: holds, format: format}
	for _, v := range figures {
		c.Figures = append(c.Figures, Figure{Value: v, Min: v, Max: v, seeds: []float64{v}})
	}
	c.Measured = c.render()
	return c
}

func (c *Claim) render() string {
	args := make([]any, len(c.Figures))
	for i, f := range c.Figures {
		args[i] = f
	}
	return fmt.Sprintf(c.format, args...)
}

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
	if sr, ok := s.(seedRunner); ok {
		return sr.runSeeds(ctx, p, o, n)
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
		out.Claims[i] = mergeClaim(seeds, per)
	}
	return &out
}

// mergeClaim merges one claim's verdicts on seeds.
func mergeClaim(seeds []uint64, per []Claim) Claim {
	c := per[0]
	c.Seeds = seeds
	c.Differs = nil
	for k, pc := range per {
		if !pc.Holds {
			c.Differs = append(c.Differs, seeds[k])
		}
	}
	c.Holds = len(c.Differs) == 0
	structured := c.format != ""
	for _, pc := range per {
		structured = structured && len(pc.Figures) == len(c.Figures)
	}
	if structured {
		c.Figures = make([]Figure, len(per[0].Figures))
		for j := range c.Figures {
			vals := make([]float64, len(per))
			for k, pc := range per {
				vals[k] = pc.Figures[j].Value
			}
			c.Figures[j] = Figure{Value: median(vals), Min: slices.Min(vals), Max: slices.Max(vals), seeds: vals}
		}
		c.Measured = c.render()
	} else if m, ok := mergeText(per); ok {
		c.Measured = m
	} else {
		c.Measured = fmt.Sprintf("seed %d: %s", seeds[0], c.Measured)
	}
	return c
}

// number matches a figure in a claim's text: digits, perhaps with a
// fraction (no sign: a hyphen in "1-5" separates).
var numberRE = regexp.MustCompile(`\d+(?:\.\d+)?`)

// mergeText merges the Measured texts of a claim built without figures:
// when every seed's text is the same but for its numbers, each number
// becomes the median over the seeds with their range, in the first
// seed's precision. It reports false when the texts differ otherwise.
func mergeText(per []Claim) (string, bool) {
	skeleton := numberRE.ReplaceAllString(per[0].Measured, "\x00")
	nums := make([][]string, len(per))
	for k, pc := range per {
		if numberRE.ReplaceAllString(pc.Measured, "\x00") != skeleton {
			return "", false
		}
		nums[k] = numberRE.FindAllString(pc.Measured, -1)
	}
	i := 0
	return numberRE.ReplaceAllStringFunc(per[0].Measured, func(tok string) string {
		prec := 0
		if dot := strings.IndexByte(tok, '.'); dot >= 0 {
			prec = len(tok) - dot - 1
		}
		vals := make([]float64, len(per))
		for k := range per {
			vals[k], _ = strconv.ParseFloat(nums[k][i], 64)
		}
		i++
		return fmt.Sprintf("%.*f", prec, Figure{Value: median(vals), Min: slices.Min(vals), Max: slices.Max(vals)})
	}), true
}

// SeedSummary says on how many seeds a claim was judged and which ones
// disagree: "5 seeds (1-5)" or "5 seeds (1-5); differs on 3, 5".
func (c Claim) SeedSummary() string {
	if len(c.Seeds) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d seeds (%d-%d)", len(c.Seeds), c.Seeds[0], c.Seeds[len(c.Seeds)-1])
	if len(c.Seeds) == 1 {
		s = fmt.Sprintf("seed %d", c.Seeds[0])
	}
	if c.Pooled {
		s += " pooled"
	}
	if len(c.Differs) > 0 {
		ds := make([]string, len(c.Differs))
		for i, d := range c.Differs {
			ds[i] = strconv.FormatUint(d, 10)
		}
		if c.Pooled {
			s += "; alone, too few samples to judge, seeds " + strings.Join(ds, ", ") + " differ"
		} else {
			s += "; differs on " + strings.Join(ds, ", ")
		}
	}
	return s
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

// median is the middle value of vs, or the mean of the middle two.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
