package sim

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestMergeChartsMedianAndRange(t *testing.T) {
	chart := func(ys ...float64) *Result {
		return &Result{Charts: []Chart{{Name: "c", Series: []Series{
			{Name: "a", X: []float64{0, 1, 2}, Y: ys},
			{Name: "ragged", X: []float64{0, 1, 2 + ys[0]}, Y: []float64{ys[0], ys[0], ys[0]}},
		}}}}
	}
	rs := []*Result{chart(1, 10, math.NaN()), chart(3, 30, 5), chart(2, 20, math.Inf(1))}
	got := mergeCharts(rs)
	want := Series{Name: "a", X: []float64{0, 1, 2}, Y: []float64{2, 20, 5}, Lo: []float64{1, 10, 5}, Hi: []float64{3, 30, 5}}
	if d := cmp.Diff(want, got[0].Series[0]); d != "" {
		t.Errorf("merged series (-want +got):\n%s", d)
	}
	// Points that do not line up over the seeds are the first seed's.
	if d := cmp.Diff(rs[0].Charts[0].Series[1], got[0].Series[1], cmpopts.EquateNaNs()); d != "" {
		t.Errorf("ragged series (-first seed +got):\n%s", d)
	}
	// The first seed's chart is not changed.
	if y := rs[0].Charts[0].Series[0].Y[1]; y != 10 {
		t.Errorf("first seed's Y[1] = %v after the merge, want 10", y)
	}
	none := mergeCharts([]*Result{chart(math.NaN(), 1, 1), chart(math.NaN(), 1, 1)})
	if y := none[0].Series[0].Y[0]; !math.IsNaN(y) {
		t.Errorf("a point with no finite value merged to %v, want NaN", y)
	}
}
