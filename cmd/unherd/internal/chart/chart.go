package chart

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/unherd/unherd/sim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Size of every chart: 16 cm by 10 cm, about 640 by 400 pixels in PNG.
const (
	Width  = 16 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// MarkPoints is the most points a series may have for each point to be
// marked as well as joined.
const MarkPoints = 30

// legendLine is one legend entry's height as a share of the plot area's.
const legendLine = 0.055

// Formats lists the formats Write draws, as file extensions.
var Formats = []string{"png", "svg"}

// ErrNoData is returned for a chart without a single finite point.
var ErrNoData = errors.New("chart: no finite data")

// Write draws c to w in format "png" or "svg".
func Write(w io.Writer, c sim.Chart, format string) error {
	p, err := build(c)
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(Width, Height, format)
	if err != nil {
		return fmt.Errorf("chart %s: %w", c.Name, err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// build lays c out as a plot: title, axis labels, a grid, one line per
// series and a legend.
func build(c sim.Chart) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Legend.Top = true
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	drawn := 0
	for i, s := range c.Series {
		xys := finite(s)
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("chart %s, series %s: %w", c.Name, s.Name, err)
		}
		line.Color = plotutil.Color(i)
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
				return nil, fmt.Errorf("chart %s, series %s: %w", c.Name, s.Name, err)
			}
			pts.Color = line.Color
			pts.Shape = plotutil.Shape(i)
			pts.Radius = vg.Points(2.5)
			p.Add(pts)
			thumb = append(thumb, pts)
		}
		p.Legend.Add(s.Name, thumb...)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoData, c.Name)
	}
	// Keep zero in view when all values are positive: a chart of load or
	// latency read against a truncated axis exaggerates differences.
	if p.Y.Min > 0 {
		p.Y.Min = 0
	}
	// Leave room above the data for the legend, about one line of text
	// per entry, so it does not cover the lines.
	if span := p.Y.Max - p.Y.Min; span > 0 {
		frac := legendLine * float64(drawn+1)
		p.Y.Max += span * frac / (1 - frac)
	}
	return p, nil
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

// finite returns s's points whose coordinates are both finite, up to the
// shorter of X and Y.
func finite(s sim.Series) plotter.XYs {
	n := min(len(s.X), len(s.Y))
	xys := make(plotter.XYs, 0, n)
	for i := range n {
		x, y := s.X[i], s.Y[i]
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		xys = append(xys, plotter.XY{X: x, Y: y})
	}
	return xys
}
