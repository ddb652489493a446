package chart

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/unherd/unherd/sim"
)

func sample() sim.Chart {
	return sim.Chart{
		Name: "calls", Title: "Calls per client", XLabel: "clients", YLabel: "calls",
		Series: []sim.Series{
			{Name: "none", X: []float64{10, 20, 30}, Y: []float64{3, 7, 12}},
			{Name: "full", X: []float64{10, 20, 30, 40}, Y: []float64{2, 3, math.NaN(), 5}},
		},
	}
}

func TestWritePNG(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, sample(), "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() < 400 || r.Dy() < 200 {
		t.Fatalf("image is %v", r)
	}
}

func TestWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, sample(), "svg"); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"<svg", "Calls per client", "clients", "none", "full"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestNoData(t *testing.T) {
	for name, c := range map[string]sim.Chart{
		"no series":  {Name: "empty"},
		"only NaN":   {Name: "nan", Series: []sim.Series{{Name: "a", X: []float64{1}, Y: []float64{math.NaN()}}}},
		"mismatched": {Name: "short", Series: []sim.Series{{Name: "a", X: []float64{1, 2}}}},
	} {
		if err := Write(&bytes.Buffer{}, c, "png"); !errors.Is(err, ErrNoData) {
			t.Errorf("%s: error %v, want ErrNoData", name, err)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, sample(), "bmp"); err == nil {
		t.Fatal("bmp accepted")
	}
}

// Percentiles on a nines axis sit one nine apart, labelled as
// percentiles.
func TestNinesTicks(t *testing.T) {
	for pct, want := range map[float64]float64{50: math.Log10(2), 90: 1, 99: 2, 99.9: 3, 99.99: 4} {
		if got := nines(pct); math.Abs(got-want) > 1e-9 {
			t.Errorf("nines(%v) = %v, want %v", pct, got, want)
		}
	}
	var labels []string
	for _, tk := range (ninesTicks{}).Ticks(nines(50), nines(99.99)) {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, " "); got != "p50 p90 p99 p99.9 p99.99" {
		t.Errorf("ticks %q", got)
	}
}

// A log axis spans whole decades, and a zero is drawn on its bottom edge
// instead of being dropped, with no tick labelled 0 (a log axis has no
// zero) but the legend saying so; a shaded span is named on the plot.
func TestLogAxisAndShade(t *testing.T) {
	c := sim.Chart{Name: "load", YScale: scaleLog, YLabel: "load", Shade: []sim.Span{{From: 1, To: 2, Label: "down"}},
		Series: []sim.Series{{Name: "a", X: []float64{0, 1, 2, 3}, Y: []float64{300, 0, 40, 300}}}}
	p, legend, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	// 40 to 300 spans the decades 10 to 1000; the zero gets the decade
	// below.
	if p.Y.Min != 1 || p.Y.Max != 1000 {
		t.Errorf("log axis from %v to %v, want 1 to 1000", p.Y.Min, p.Y.Max)
	}
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label == "0" {
			t.Errorf("tick %+v labelled 0 on a log axis", tk)
		}
	}
	if last := legend[len(legend)-1]; last.name != ZeroNote {
		t.Errorf("legend ends with %q, not the note on zeros", last.name)
	}
	if !strings.Contains(svg(t, c), "down") {
		t.Error("the shaded span is not named")
	}
	for _, e := range legend {
		if e.name == "down" {
			t.Error("the shaded span is in the legend as well as on the plot")
		}
	}
}

// No log axis tick, over ranges from a fraction to millions, is labelled
// 0, and labels of thousands carry separators.
func TestLogTicks(t *testing.T) {
	for _, r := range [][2]float64{{0.001, 1}, {0.1, 10}, {1, 1e6}, {100, 1e5}, {10, 100}} {
		for _, tk := range (logTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "0" || tk.Value <= 0 {
				t.Errorf("range %v: tick %+v", r, tk)
			}
			if tk.Value == 10000 && tk.Label != "10,000" {
				t.Errorf("range %v: 10000 labelled %q", r, tk.Label)
			}
		}
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 5: "5", 25: "25", 999: "999", 1000: "1,000", 11708: "11,708", 100000: "100,000",
		1234567: "1,234,567", -11708: "-11,708", 0.25: "0.25", 1.5: "1.5", 0.001: "0.001",
		1234.5: "1,234.5", 2.0000001: "2",
	} {
		if got := Format(v); got != want {
			t.Errorf("Format(%v) = %q, want %q", v, got, want)
		}
	}
}

// With few X values, the X ticks are the data's X values: clients 10 to
// 190 by 30 give ticks at 10, 40, ..., 190 and no other.
func TestTicksOnData(t *testing.T) {
	xs := []float64{10, 40, 70, 100, 130, 160, 190}
	c := sim.Chart{Name: "calls", Series: []sim.Series{{Name: "a", X: xs, Y: []float64{1, 2, 3, 4, 5, 6, 7}}}}
	p, _, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	ts := p.X.Tick.Marker.Ticks(10, 190)
	var got []string
	for _, tk := range ts {
		got = append(got, tk.Label)
	}
	if s := strings.Join(got, " "); s != "10 40 70 100 130 160 190" {
		t.Errorf("X ticks %q", s)
	}
	// A long series keeps the default ticks.
	long := sim.Series{Name: "a"}
	for i := range 100 {
		long.X, long.Y = append(long.X, float64(i)), append(long.Y, 1)
	}
	p, _, err = build(sim.Chart{Name: "long", Series: []sim.Series{long}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.X.Tick.Marker.(plainTicks); !ok {
		t.Errorf("X ticks of a 100-point series are %T", p.X.Tick.Marker)
	}
}

// Every series has its own dash pattern, so series on top of each other
// and series in grey are told apart.
func TestDashesDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := range len(dashes) {
		k := fmt.Sprint(Dashes(i))
		if j, ok := seen[k]; ok {
			t.Errorf("series %d and %d share dashes %s", j, i, k)
		}
		seen[k] = i
	}
}

// The legend lies below the plot: the plot keeps the full width.
func TestLegendBelow(t *testing.T) {
	c := sample()
	c.Series = append(c.Series, sim.Series{Name: "every layer + token bucket, a long name", X: []float64{1, 2}, Y: []float64{1, 2}})
	if !strings.Contains(svg(t, c), "a long name") {
		t.Error("legend entry missing")
	}
}

// A chart with an X step has its ticks on the step's multiples: a 60 s
// interval over 0 to 179 s gives 0, 60, 120; a reference line lies
// inside the vertical range and is named on the plot, not in the legend.
func TestStepAndLine(t *testing.T) {
	s := sim.Series{Name: "a"}
	for i := range 180 {
		s.X, s.Y = append(s.X, float64(i)), append(s.Y, 10)
	}
	c := sim.Chart{Name: "p", XStep: 60, YScale: scaleLog, Series: []sim.Series{s},
		Lines: []sim.Line{{Y: 500, Label: "capacity 500/s"}}}
	p, legend, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range p.X.Tick.Marker.Ticks(0, 179) {
		got = append(got, tk.Label)
	}
	if s := strings.Join(got, " "); s != "0 60 120" {
		t.Errorf("X ticks %q", s)
	}
	if p.Y.Max < 500 {
		t.Errorf("Y axis ends at %v, below the line at 500", p.Y.Max)
	}
	if len(legend) != 1 || legend[0].name != "a" {
		t.Errorf("legend %+v, want the series alone", legend)
	}
	if !strings.Contains(svg(t, c), "capacity 500/s") {
		t.Error("the reference line is not named")
	}
}

// A series merged over seeds has its range shaded: the vertical axis
// takes in the highest seed, the legend says what the shading is, and a
// range reaching zero on a log axis ends on the bottom edge; a chart
// without ranges has no such entry.
func TestBand(t *testing.T) {
	c := sim.Chart{Name: "b", Series: []sim.Series{{Name: "a", X: []float64{0, 1, 2, 3}, Y: []float64{5, 6, 7, 8},
		Lo: []float64{4, 5, math.NaN(), 7}, Hi: []float64{6, 40, 9, 9}}}}
	p, legend, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max < 40 {
		t.Errorf("Y axis ends at %v, below the range's top 40", p.Y.Max)
	}
	if legend[0].name != BandNote {
		t.Errorf("legend %+v, want the note on ranges first", legend)
	}
	// The NaN splits the range in two stretches; the second has one
	// point, too few to shade.
	if segs := band(c.Series[0], c.XScale, c.YScale); len(segs) != 1 || len(segs[0]) != 4 {
		t.Errorf("range outline %v, want one stretch of 2 points each way", segs)
	}
	log := sim.Series{Name: "a", X: []float64{0, 1}, Y: []float64{10, 10}, Lo: []float64{0, 5}, Hi: []float64{20, 20}}
	if segs := band(log, scaleLinear, scaleLog); len(segs) != 1 || !math.IsInf(segs[0][0].Y, -1) {
		t.Errorf("log range outline %v, want a zero as -Inf", segs)
	}
	c.Series[0].Lo, c.Series[0].Hi = nil, nil
	if _, legend, _ := build(c); len(legend) != 1 {
		t.Errorf("legend %+v without ranges, want the series alone", legend)
	}
}

// Linear ticks step by 1, 2 or 5 times a power of ten: 0 to 19.9 s gives
// 0, 2, ..., 18, not 0, 9, 18.
func TestPlainTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 19.9, "0 2 4 6 8 10 12 14 16 18"},
		{0, 500, "0 100 200 300 400 500"},
		{0, 12000, "0 2,000 4,000 6,000 8,000 10,000 12,000"},
		{1, 5, "1 2 3 4 5"},
	} {
		var got []string
		for _, tk := range (plainTicks{}).Ticks(c.lo, c.hi) {
			got = append(got, tk.Label)
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("%v to %v: ticks %q, want %q", c.lo, c.hi, s, c.want)
		}
	}
}

// A note is drawn on the plot, not in the legend.
func TestNote(t *testing.T) {
	c := sim.Chart{Name: "n", Series: []sim.Series{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{3, 2, 1}}},
		Notes: []sim.Note{{X: 2, Y: 1, Text: "the dip"}}}
	_, legend, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(legend) != 1 {
		t.Errorf("legend %+v, want the series alone", legend)
	}
	if !strings.Contains(svg(t, c), "the dip") {
		t.Error("the note is not drawn")
	}
}

// svg returns c drawn as SVG.
func svg(t *testing.T, c sim.Chart) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, c, "svg"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A height is measured along the axis's own scale.
func TestHeight(t *testing.T) {
	if h := height(20, 0, 20, scaleLinear); h != 1 {
		t.Errorf("height of the top on a linear axis %v, want 1", h)
	}
	if h := height(100, 1, 1000, scaleLog); math.Abs(h-2.0/3) > 1e-12 {
		t.Errorf("height of 100 on a log axis from 1 to 1000 is %v, want 2/3", h)
	}
}

// TestLogAxisShowsLinesOnADecade: the what-if's open stream, whose
// default keeps a steady 10000 attempts per second, on a log axis: the
// axis takes in the decade below, so the line is not on its edge.
func TestLogAxisShowsLinesOnADecade(t *testing.T) {
	c := sim.Chart{Name: "outage_open", YScale: scaleLog, Series: []sim.Series{
		{Name: "yours", X: []float64{0, 1, 2}, Y: []float64{10000, 50000, 10000}},
		{Name: "default", X: []float64{0, 1, 2}, Y: []float64{10000, 10000, 10000}},
	}}
	p, _, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	if !(p.Y.Min < 10000 && p.Y.Max > 50000) {
		t.Errorf("y axis from %v to %v; want 10000 and 50000 inside it", p.Y.Min, p.Y.Max)
	}
}
