package chart

import (
	"bytes"
	"errors"
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
// instead of being dropped; a shaded span is in the legend.
func TestLogAxisAndShade(t *testing.T) {
	c := sim.Chart{Name: "load", YScale: sim.ScaleLog, Shade: []sim.Span{{From: 1, To: 2, Label: "down"}},
		Series: []sim.Series{{Name: "a", X: []float64{0, 1, 2, 3}, Y: []float64{300, 0, 40, 300}}}}
	p, _, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	// 40 to 300 spans the decades 10 to 1000; the zero gets the decade
	// below, labelled 0.
	if p.Y.Min != 1 || p.Y.Max != 1000 {
		t.Errorf("log axis from %v to %v, want 1 to 1000", p.Y.Min, p.Y.Max)
	}
	if ts := p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max); ts[0].Value != 1 || ts[0].Label != "0" {
		t.Errorf("bottom tick %+v, want 1 labelled 0", ts[0])
	}
	var b bytes.Buffer
	if err := Write(&b, c, "svg"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "down") {
		t.Error("the shaded span is not in the legend")
	}
}
