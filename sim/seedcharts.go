package sim

import (
	"math"
	"slices"
)

// mergeCharts returns the charts of rs[0] with every point's Y the
// median of that point over rs, and the series' Lo and Hi the lowest and
// highest. A series whose points do not line up over rs (another count
// or other X) is kept as rs[0] has it, without a range. NaN and infinite
// values are left out of a point's median and range; a point with none
// finite stays NaN.
func mergeCharts(rs []*Result) []Chart {
	out := make([]Chart, len(rs[0].Charts))
	for i, c := range rs[0].Charts {
		out[i] = c
		out[i].Series = make([]Series, len(c.Series))
		for j, s := range c.Series {
			out[i].Series[j] = mergeSeries(rs, i, j, s)
		}
	}
	return out
}

// mergeSeries merges series j of chart i over rs, s being rs[0]'s.
func mergeSeries(rs []*Result, i, j int, s Series) Series {
	for _, r := range rs[1:] {
		if i >= len(r.Charts) || j >= len(r.Charts[i].Series) || !slices.Equal(r.Charts[i].Series[j].X, s.X) {
			return s
		}
	}
	m := Series{Name: s.Name, X: s.X, Y: make([]float64, len(s.Y)), Lo: make([]float64, len(s.Y)), Hi: make([]float64, len(s.Y))}
	vals := make([]float64, 0, len(rs))
	for k := range s.Y {
		vals = vals[:0]
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range rs {
			if y := r.Charts[i].Series[j].Y[k]; !math.IsNaN(y) && !math.IsInf(y, 0) {
				vals = append(vals, y)
				lo, hi = min(lo, y), max(hi, y)
			}
		}
		if len(vals) == 0 {
			m.Y[k], m.Lo[k], m.Hi[k] = math.NaN(), math.NaN(), math.NaN()
			continue
		}
		m.Y[k], m.Lo[k], m.Hi[k] = median(vals), lo, hi
	}
	return m
}
