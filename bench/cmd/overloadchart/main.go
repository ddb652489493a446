// Command overloadchart draws the loopback overload run's goodput against
// its offered load, one group of bars per phase and one bar per
// protection, as a PNG or SVG chart sized for a README.
//
// It reads the JSON that TestOverload in package reliability writes to
// the file UNHERD_RELIABILITY_OVERLOAD_JSON names:
//
//	overloadchart -in overload.json -out docs/overload.png
//
// scripts/overload-chart.sh runs both at full scale. The output's format
// follows its extension, .png or .svg.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// run is the part of TestOverload's JSON the chart reads.
type run struct {
	Scale        string  `json:"scale"`
	Seed         uint64  `json:"seed"`
	Workers      int     `json:"workers"`
	PhaseSeconds float64 `json:"phase_seconds"`
	Timeout      float64 `json:"timeout_s"`
	Rows         []struct {
		Protection    string `json:"protection"`
		HarnessFailed string `json:"harness_failed"`
		Phases        []struct {
			Phase   string  `json:"phase"`
			Offered float64 `json:"offered"`
			Goodput float64 `json:"goodput"`
		} `json:"phases"`
	} `json:"rows"`
}

// The chart's size: 800 by 450 pixels at the PNG canvas's 96 dots per
// inch (a vg.Length is a point, 1/72 inch).
const (
	width  = 800 * vg.Inch / 96
	height = 450 * vg.Inch / 96
)

// palette is the Okabe-Ito palette's orange, sky blue and bluish green,
// which stay distinct for colour-blind readers, as in cmd/unherd's
// charts.
var palette = []color.Color{
	color.RGBA{0xe6, 0x9f, 0x00, 0xff},
	color.RGBA{0x56, 0xb4, 0xe9, 0xff},
	color.RGBA{0x00, 0x9e, 0x73, 0xff},
}

var grey = color.RGBA{0x66, 0x66, 0x66, 0xff}

func main() {
	in := flag.String("in", "", "TestOverload's JSON results (required)")
	out := flag.String("out", "overload.png", "the chart to write, .png or .svg")
	flag.Parse()
	if err := chart(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "overloadchart:", err)
		os.Exit(1)
	}
}

// chart reads the results at in and writes their chart to out.
func chart(in, out string) error {
	if in == "" {
		return errors.New("-in is required")
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var r run
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	format := strings.TrimPrefix(filepath.Ext(out), ".")
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := write(f, r, format); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// write draws r's chart to w in format "png" or "svg".
func write(w io.Writer, r run, format string) error {
	p, err := build(r)
	if err != nil {
		return err
	}
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return err
	}
	p.Draw(draw.New(c))
	_, err = c.WriteTo(w)
	return err
}

// build lays out r's chart: a group of bars per phase, a bar per
// protection with its value above it, a dashed line at capacity.
func build(r run) (*plot.Plot, error) {
	if len(r.Rows) == 0 || len(r.Rows[0].Phases) == 0 {
		return nil, errors.New("no results to draw")
	}
	phases := r.Rows[0].Phases
	for _, row := range r.Rows {
		if len(row.Phases) != len(phases) {
			return nil, fmt.Errorf("%q has %d phases, %q %d", row.Protection, len(row.Phases), r.Rows[0].Protection, len(phases))
		}
		if row.HarnessFailed != "" {
			return nil, fmt.Errorf("the machine could not run the harness for %q as designed (%s): run again on a quieter machine", row.Protection, row.HarnessFailed)
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Goodput under overload: %d workers, open-loop load, %s caller timeout", r.Workers, seconds(r.Timeout))
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(6)
	p.Y.Label.Text = "goodput / capacity"
	p.X.Label.Text = fmt.Sprintf("offered load / capacity, one phase after another (%s each, seed %d)", seconds(r.PhaseSeconds), r.Seed)
	p.Y.Min, p.Y.Max = 0, 1.3
	p.Y.Tick.Marker = plot.ConstantTicks(ticks(0, 1.2, 0.2))
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	p.Add(grid)

	// Bars: a group per phase, centred on the phase's nominal X, each bar
	// with its value above it.
	barWidth := vg.Points(36)
	for i, row := range r.Rows {
		vals := make(plotter.Values, len(row.Phases))
		var at plotter.XYLabels
		for j, ph := range row.Phases {
			vals[j] = ph.Goodput
			at.XYs = append(at.XYs, plotter.XY{X: float64(j), Y: ph.Goodput})
			at.Labels = append(at.Labels, fmt.Sprintf("%.2f", ph.Goodput))
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return nil, err
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(r.Rows)-1)/2) * barWidth
		p.Add(bars)
		p.Legend.Add(row.Protection, bars)
		values, err := plotter.NewLabels(at)
		if err != nil {
			return nil, err
		}
		for k := range values.TextStyle {
			values.TextStyle[k].XAlign = draw.XCenter
			values.TextStyle[k].Font.Size = vg.Points(8.5)
		}
		values.Offset = vg.Point{X: bars.Offset, Y: vg.Points(2)}
		p.Add(values)
	}

	// Capacity: a dashed line across the chart at 1, named at its right.
	capacity, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(phases)) - 0.5, Y: 1}})
	if err != nil {
		return nil, err
	}
	capacity.Color = grey
	capacity.Width = vg.Points(1)
	capacity.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(capacity)
	name, err := plotter.NewLabels(plotter.XYLabels{XYs: capacity.XYs[1:], Labels: []string{"capacity"}})
	if err != nil {
		return nil, err
	}
	name.TextStyle[0].XAlign = draw.XRight
	name.TextStyle[0].Color = grey
	name.TextStyle[0].Font.Size = vg.Points(9)
	name.Offset = vg.Point{X: -vg.Points(3), Y: vg.Points(3)}
	p.Add(name)

	names := make([]string, len(phases))
	for j, ph := range phases {
		names[j] = fmt.Sprintf("%s (%.2fx)", ph.Phase, ph.Offered)
	}
	p.NominalX(names...)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = -vg.Points(2)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p, nil
}

// seconds formats s seconds as "1 s" or "2.5 s".
func seconds(s float64) string { return fmt.Sprintf("%g s", s) }

// ticks returns labelled ticks from lo to hi, step apart.
func ticks(lo, hi, step float64) []plot.Tick {
	var t []plot.Tick
	for i := 0; ; i++ {
		v := lo + float64(i)*step
		if v > hi+step/2 {
			return t
		}
		t = append(t, plot.Tick{Value: v, Label: fmt.Sprintf("%.1f", v)})
	}
}
