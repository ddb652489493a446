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
