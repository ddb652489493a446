package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"github.com/unherd/unherd/sim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Size of every chart: 20 cm by 10 cm, about 760 by 380 pixels in PNG;
// the legend takes a column on the right, off the data.
const (
	Width  = 20 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// MarkPoints is the most points a series may have for each point to be
// marked as well as joined.
const MarkPoints = 30

// Formats lists the formats Write draws, as file extensions.
var Formats = []string{"png", "svg"}

// ErrNoData is returned for a chart without a single finite point.
var ErrNoData = errors.New("chart: no finite data")

// Palette is the Okabe-Ito palette (Okabe and Ito, "Color Universal
// Design", 2008), whose colours stay distinct for readers with any common
// colour-vision deficiency and, with the dash patterns, in grey. Yellow
// comes last: it is faint on white.
var Palette = []color.Color{
	color.RGBA{0x00, 0x00, 0x00, 0xff}, // black
	color.RGBA{0xe6, 0x9f, 0x00, 0xff}, // orange
	color.RGBA{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	color.RGBA{0x00, 0x9e, 0x73, 0xff}, // bluish green
	color.RGBA{0x00, 0x72, 0xb2, 0xff}, // blue
	color.RGBA{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	color.RGBA{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	color.RGBA{0xf0, 0xe4, 0x42, 0xff}, // yellow
}

// shade is the fill of a Span: light grey, behind the data.
var shade = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}

// Write draws c to w in format "png" or "svg".
func Write(w io.Writer, c sim.Chart, format string) error {
	p, legend, err := build(c)
	if err != nil {
		return err
	}
	cw, err := draw.NewFormattedCanvas(Width, Height, format)
	if err != nil {
		return fmt.Errorf("chart %s: %w", c.Name, err)
	}
	dc := draw.New(cw)
	// The legend's column: as wide as its widest entry.
	lw := legend.Rectangle(dc).Size().X + 0.4*vg.Centimeter
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	col := draw.Crop(dc, Width-lw+0.2*vg.Centimeter, 0, 0, -0.9*vg.Centimeter)
	legend.Draw(col)
	_, err = cw.WriteTo(w)
	return err
}

// build lays c out as a plot (title, axis labels, a grid, shaded spans,
// one line per series) and its legend, drawn beside it.
func build(c sim.Chart) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.X.Tick.Marker = ticker(c.XScale)
	p.Y.Tick.Marker = ticker(c.YScale)
	if c.YScale == sim.ScaleLog {
		p.Y.Scale = plot.LogScale{}
	}
	if c.XScale == sim.ScaleLog {
		p.X.Scale = plot.LogScale{}
	}
	// The points first, for the vertical range.
	series := make([]plotter.XYs, len(c.Series))
	ymin, ymax := math.Inf(1), math.Inf(-1)
	drawn, zeros := 0, false
	for i, s := range c.Series {
		series[i] = finite(s, c.XScale, c.YScale)
		for _, xy := range series[i] {
			if math.IsInf(xy.Y, -1) {
				zeros = true
			} else {
				ymin, ymax = math.Min(ymin, xy.Y), math.Max(ymax, xy.Y)
			}
		}
		if len(series[i]) > 0 {
			drawn++
		}
	}
	if drawn == 0 {
		return nil, legend, fmt.Errorf("%w in %s", ErrNoData, c.Name)
	}
	switch {
	case math.IsInf(ymin, 1): // only zeros on a log axis
		ymin, ymax = 1, 10
	case c.YScale == sim.ScaleLog:
		// Whole decades. Zeros get a decade of their own at the bottom,
		// labelled 0, apart from the smallest value.
		ymin, ymax = math.Pow(10, math.Floor(math.Log10(ymin))), math.Pow(10, math.Ceil(math.Log10(ymax)))
		if zeros {
			ymin /= 10
			p.Y.Tick.Marker = zeroFloor{floor: ymin}
		}
	case ymin > 0:
		// Keep zero in view on a linear axis when all values are
		// positive: a chart of load or latency read against a truncated
		// axis exaggerates differences.
		ymin = 0
	}
	if ymax == ymin {
		ymax = ymin + 1
	}
	// The shaded spans first, over the whole height, then the grid, then
	// the data.
	for _, sp := range c.Shade {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: sp.From, Y: ymin}, {X: sp.To, Y: ymin}, {X: sp.To, Y: ymax}, {X: sp.From, Y: ymax}})
		if err != nil {
			return nil, legend, fmt.Errorf("chart %s, span %s: %w", c.Name, sp.Label, err)
		}
		poly.Color = shade
		poly.LineStyle.Width = 0
		p.Add(poly)
		if sp.Label != "" {
			legend.Add(sp.Label, poly)
		}
	}
	p.Add(plotter.NewGrid())
	for i, xys := range series {
		if len(xys) == 0 {
			continue
		}
		// Zeros on a log axis (-Inf from finite) lie on the bottom edge,
		// labelled 0, so a series that falls to nothing is seen to.
		for k := range xys {
			if math.IsInf(xys[k].Y, -1) {
				xys[k].Y = ymin
			}
		}
		name := c.Series[i].Name
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, legend, fmt.Errorf("chart %s, series %s: %w", c.Name, name, err)
		}
		line.Color = Palette[i%len(Palette)]
		line.Width = vg.Points(1.5)
		if len(xys) <= MarkPoints {
			// Dashes tell short series apart in grey; on long, noisy
			// series they only blur the line.
			line.Dashes = plotutil.Dashes(i)
		}
		p.Add(line)
		thumb := []plot.Thumbnailer{line}
		if len(xys) <= MarkPoints {
			pts, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, legend, fmt.Errorf("chart %s, series %s: %w", c.Name, name, err)
			}
			pts.Color = line.Color
			pts.Shape = plotutil.Shape(i)
			pts.Radius = vg.Points(2.5)
			p.Add(pts)
			thumb = append(thumb, pts)
		}
		legend.Add(name, thumb...)
	}
	p.Y.Min, p.Y.Max = ymin, ymax
	return p, legend, nil
}

// ticker returns the tick marker for an axis scale.
func ticker(s sim.Scale) plot.Ticker {
	switch s {
	case sim.ScaleLog:
		return logTicks{}
	case sim.ScaleNines:
		return ninesTicks{}
	}
	return plainTicks{}
}

// plainTicks places ticks as gonum/plot does by default but labels them
// without trailing zeros: 25, not 25.00.
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}

// logTicks labels powers of ten and marks 2 and 5 times them.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || hi/lo < 100 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// zeroFloor is logTicks on an axis whose bottom edge, floor, stands for
// zero.
type zeroFloor struct{ floor float64 }

// Ticks implements plot.Ticker.
func (z zeroFloor) Ticks(lo, hi float64) []plot.Tick {
	ts := logTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Value == z.floor {
			ts[i].Label = "0"
		}
	}
	return ts
}

// nines maps a percentile to its number of nines: 90 to 1, 99 to 2.
func nines(pct float64) float64 { return -math.Log10(1 - pct/100) }

// ninesTicks labels an axis of nines (see nines) with the percentiles.
type ninesTicks struct{}

// Ticks implements plot.Ticker.
func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, pct := range []float64{50, 90, 99, 99.9, 99.99, 99.999} {
		if v := nines(pct); v >= lo-1e-9 && v <= hi+1e-9 {
			ts = append(ts, plot.Tick{Value: v, Label: "p" + strconv.FormatFloat(pct, 'g', 6, 64)})
		}
	}
	return ts
}

// finite returns s's points whose coordinates are both finite and, on a
// log axis, not negative, up to the shorter of X and Y; X is mapped to its
// nines on a nines axis, and a zero Y on a log axis becomes -Inf.
func finite(s sim.Series, xs, ys sim.Scale) plotter.XYs {
	n := min(len(s.X), len(s.Y))
	xys := make(plotter.XYs, 0, n)
	for i := range n {
		x, y := s.X[i], s.Y[i]
		if xs == sim.ScaleNines {
			x = nines(x)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) ||
			(xs == sim.ScaleLog && x <= 0) || (ys == sim.ScaleLog && y < 0) {
			continue
		}
		if ys == sim.ScaleLog && y == 0 {
			y = math.Inf(-1) // the caller puts it on the bottom edge
		}
		xys = append(xys, plotter.XY{X: x, Y: y})
	}
	return xys
}
