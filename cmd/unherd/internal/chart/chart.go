package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/unherd/unherd/sim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Size of every chart: 20 cm by 10 cm, about 760 by 380 pixels in PNG;
// the legend takes rows below the plot, off the data.
const (
	Width  = 20 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// The axis scales of sim.Chart's XScale and YScale.
const (
	scaleLinear = ""
	scaleLog    = "log"
	scaleNines  = "nines"
)

// ZeroNote is the legend's note on a log axis with zeros, which are drawn
// on the bottom edge, a log axis having no 0.
const ZeroNote = "(zeros on the bottom edge)"

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

// reference is the colour of a reference Line: mid grey, thin and
// finely dotted, so it is not taken for a series.
var reference = color.RGBA{0x88, 0x88, 0x88, 0xff}

// Write draws c to w in format "png" or "svg".
func Write(w io.Writer, c sim.Chart, format string) error {
	p, entries, err := build(c)
	if err != nil {
		return err
	}
	cw, err := draw.NewFormattedCanvas(Width, Height, format)
	if err != nil {
		return fmt.Errorf("chart %s: %w", c.Name, err)
	}
	dc := draw.New(cw)
	rows, rh := layoutLegend(dc, entries, Width-0.6*vg.Centimeter)
	lh := vg.Length(len(rows)) * rh
	// The vertical axis label is drawn here, beside the plot: gonum/plot
	// reserves its length above the plot as well, which pushed the plot
	// away from its title.
	ylabel := p.Y.Label
	p.Y.Label.Text = ""
	var lx vg.Length
	if ylabel.Text != "" {
		sty := ylabel.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		lx = sty.Height(ylabel.Text) + 0.1*vg.Centimeter
		mid := (lh + Height) / 2
		dc.FillText(sty, vg.Point{X: 0.1 * vg.Centimeter, Y: mid}, ylabel.Text)
	}
	p.Draw(draw.Crop(dc, lx, 0, lh+0.15*vg.Centimeter, 0))
	// The legend below the plot, entries side by side in as few rows as
	// fit the width, each row centred.
	for r, row := range rows {
		var rw vg.Length
		for _, e := range row {
			rw += e.width
		}
		x := (Width - rw) / 2
		top := lh - vg.Length(r)*rh
		for _, e := range row {
			e.legend.Draw(draw.Crop(dc, x, x+e.width-Width, top-rh, top-Height))
			x += e.width
		}
	}
	_, err = cw.WriteTo(w)
	return err
}

// entry is one legend entry: a name and how its series is drawn.
type entry struct {
	name  string
	thumb []plot.Thumbnailer
}

// placed is an entry as laid out: a legend of that entry alone and its
// width, gap included.
type placed struct {
	legend plot.Legend
	width  vg.Length
}

// layoutLegend flows entries into rows no wider than width and returns
// the rows and the height of one row.
func layoutLegend(c draw.Canvas, entries []entry, width vg.Length) ([][]placed, vg.Length) {
	var rows [][]placed
	var rh, used vg.Length
	for _, e := range entries {
		l := plot.NewLegend()
		l.Top, l.Left = true, true
		l.Add(e.name, e.thumb...)
		size := l.Rectangle(c).Size()
		pe := placed{legend: l, width: size.X + 0.5*vg.Centimeter}
		rh = max(rh, size.Y+0.1*vg.Centimeter)
		if len(rows) == 0 || used+pe.width > width {
			rows, used = append(rows, nil), 0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], pe)
		used += pe.width
	}
	return rows, rh
}

// build lays c out as a plot (title, axis labels, a grid, shaded spans,
// one line per series) and its legend entries, drawn below it.
func build(c sim.Chart) (*plot.Plot, []entry, error) {
	var legend []entry
	p := plot.New()
	p.Title.Text = c.Title
	p.Title.Padding = 0.3 * vg.Centimeter
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	// Axis labels a size smaller than the title: a vertical label longer
	// than the plot is tall would push the plot down, off the title.
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	p.X.Tick.Marker = ticker(c.XScale)
	p.Y.Tick.Marker = ticker(c.YScale)
	if c.YScale == scaleLog {
		p.Y.Scale = plot.LogScale{}
	}
	if c.XScale == scaleLog {
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
		return nil, nil, fmt.Errorf("%w in %s", ErrNoData, c.Name)
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, xys := range series {
		for _, xy := range xys {
			xmin, xmax = math.Min(xmin, xy.X), math.Max(xmax, xy.X)
		}
	}
	bands := make([][]plotter.XYs, len(c.Series))
	for i, s := range c.Series {
		bands[i] = band(s, c.XScale, c.YScale)
		for _, seg := range bands[i] {
			for _, xy := range seg {
				if !math.IsInf(xy.Y, -1) {
					ymin, ymax = math.Min(ymin, xy.Y), math.Max(ymax, xy.Y)
				}
			}
		}
	}
	for _, l := range c.Lines {
		if l.Y > 0 || c.YScale != scaleLog {
			ymin, ymax = math.Min(ymin, l.Y), math.Max(ymax, l.Y)
		}
	}
	if c.XScale == scaleLinear {
		if c.XStep > 0 {
			p.X.Tick.Marker = stepTicks(c.XStep)
		} else if ts := dataTicks(series); ts != nil {
			p.X.Tick.Marker = ts
		}
	}
	switch {
	case math.IsInf(ymin, 1): // only zeros on a log axis
		ymin, ymax = 1, 10
	case c.YScale == scaleLog:
		// Whole decades. Zeros get a decade of their own at the bottom,
		// apart from the smallest value; the axis label says so, as a
		// log axis has no 0.
		// A line on a decade's bound would lie on the axis's edge, where
		// the frame hides it (an open stream's steady 10000/s): the axis
		// then takes in the decade beyond it. (Zeros have the bottom
		// decade to themselves already.)
		lo, hi := math.Log10(ymin), math.Log10(ymax)
		if !zeros && lo-math.Floor(lo) < 0.05 {
			lo--
		}
		if math.Ceil(hi)-hi < 0.05 {
			hi++
		}
		ymin, ymax = math.Pow(10, math.Floor(lo)), math.Pow(10, math.Ceil(hi))
		if zeros {
			ymin /= 10
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
			return nil, nil, fmt.Errorf("chart %s, span %s: %w", c.Name, sp.Label, err)
		}
		poly.Color = shade
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	p.Add(plotter.NewGrid())
	// The spread over the seeds: a band in the series' colour, faint,
	// behind the lines.
	banded := false
	for i, segs := range bands {
		for _, seg := range segs {
			for k := range seg {
				if math.IsInf(seg[k].Y, -1) {
					seg[k].Y = ymin
				}
			}
			poly, err := plotter.NewPolygon(seg)
			if err != nil {
				return nil, nil, fmt.Errorf("chart %s, series %s's range: %w", c.Name, c.Series[i].Name, err)
			}
			poly.Color = faint(Palette[i%len(Palette)])
			poly.LineStyle.Width = 0
			p.Add(poly)
			banded = true
		}
	}
	if banded {
		thumb, _ := plotter.NewPolygon(plotter.XYs{{}, {X: 1}, {X: 1, Y: 1}})
		thumb.Color = faint(Palette[0])
		thumb.LineStyle.Width = 0
		legend = append(legend, entry{BandNote, []plot.Thumbnailer{thumb}})
	}
	for _, l := range c.Lines {
		if c.YScale == scaleLog && l.Y <= 0 {
			continue
		}
		ref, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: l.Y}, {X: xmax, Y: l.Y}})
		if err != nil {
			return nil, nil, fmt.Errorf("chart %s, line %s: %w", c.Name, l.Label, err)
		}
		ref.Color = reference
		ref.Width = vg.Points(1)
		ref.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(ref)
		if l.Label != "" {
			// Named on the line, at its right end, above it, or below it
			// when it runs along the top of the plot.
			g := tag{X: xmax, Y: l.Y, Text: l.Label, XAlign: draw.XRight, YAlign: draw.YBottom, Off: vg.Point{X: -vg.Points(3), Y: vg.Points(2)}}
			if height(l.Y, ymin, ymax, c.YScale) > 0.97 {
				g.YAlign, g.Off.Y = draw.YTop, -g.Off.Y
			}
			p.Add(g)
		}
	}
	for i, xys := range series {
		if len(xys) == 0 {
			continue
		}
		// Zeros on a log axis (-Inf from finite) lie on the bottom edge,
		// so a series that falls to nothing is seen to.
		for k := range xys {
			if math.IsInf(xys[k].Y, -1) {
				xys[k].Y = ymin
			}
		}
		name := c.Series[i].Name
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, nil, fmt.Errorf("chart %s, series %s: %w", c.Name, name, err)
		}
		line.Color = Palette[i%len(Palette)]
		line.Width = vg.Points(1.5)
		// Dashes tell series apart without colour, and series that lie
		// on top of each other apart at all.
		line.Dashes = Dashes(i)
		p.Add(line)
		thumb := []plot.Thumbnailer{line}
		if len(xys) <= MarkPoints {
			pts, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, nil, fmt.Errorf("chart %s, series %s: %w", c.Name, name, err)
			}
			pts.Color = line.Color
			pts.Shape = plotutil.Shape(i)
			pts.Radius = vg.Points(2.5)
			p.Add(pts)
			thumb = append(thumb, pts)
		}
		legend = append(legend, entry{name, thumb})
	}
	for _, sp := range c.Shade {
		if sp.Label != "" {
			// Named inside the span, at its top left, over the data.
			p.Add(tag{X: sp.From, Y: ymax, Text: sp.Label, XAlign: draw.XLeft, YAlign: draw.YTop, Off: vg.Point{X: vg.Points(3), Y: -vg.Points(3)}})
		}
	}
	for _, n := range c.Notes {
		// Circled, and the text beside the point, at its height, on the
		// side towards the middle of the plot.
		g := tag{X: n.X, Y: n.Y, Text: n.Text, Mark: true, XAlign: draw.XLeft, YAlign: draw.YCenter, Off: vg.Point{X: vg.Points(7)}}
		if c.XScale == scaleNines {
			g.X = nines(n.X)
		}
		if g.X > (xmin+xmax)/2 {
			g.XAlign, g.Off.X = draw.XRight, -g.Off.X
		}
		p.Add(g)
	}
	if zeros {
		// Said in the legend: the axis label has no room for it.
		legend = append(legend, entry{name: ZeroNote})
	}
	p.Y.Min, p.Y.Max = ymin, ymax
	return p, legend, nil
}

// BandNote is the legend's entry for the bands around lines, drawn for a
// chart merged over seeds.
const BandNote = "shaded around a line: its range over the seeds"

// faint returns c, translucent: the fill of a series' band.
func faint(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0x38}
}

// labelColour is the colour of the notes on a plot: dark grey.
var labelColour = color.RGBA{0x44, 0x44, 0x44, 0xff}

// tag is a short text on the plot at a point of the data, aligned on it
// by XAlign and YAlign and moved by Off, in 9-point dark grey on a
// translucent white box, so it reads over lines and shading alike. A
// Mark also circles the point.
type tag struct {
	X, Y   float64
	Text   string
	XAlign draw.XAlignment
	YAlign draw.YAlignment
	Off    vg.Point
	Mark   bool
}

// Plot implements plot.Plotter.
func (g tag) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	at := vg.Point{X: tx(g.X), Y: ty(g.Y)}
	if g.Mark {
		c.StrokeLines(draw.LineStyle{Color: labelColour, Width: vg.Points(1)}, circle(at, vg.Points(4)))
	}
	sty := text.Style{Color: labelColour, Font: font.From(plot.DefaultFont, vg.Points(9)), XAlign: g.XAlign, YAlign: g.YAlign, Handler: plot.DefaultTextHandler}
	at = at.Add(g.Off)
	r := sty.Rectangle(g.Text)
	pad := vg.Points(1.5)
	box := vg.Rectangle{Min: at.Add(r.Min).Sub(vg.Point{X: pad, Y: pad}), Max: at.Add(r.Max).Add(vg.Point{X: pad, Y: pad})}
	c.FillPolygon(color.NRGBA{0xff, 0xff, 0xff, 0xc8}, c.ClipPolygonXY([]vg.Point{box.Min, {X: box.Max.X, Y: box.Min.Y}, box.Max, {X: box.Min.X, Y: box.Max.Y}}))
	c.FillText(sty, at, g.Text)
}

// circle returns the outline of a circle of radius r around at.
func circle(at vg.Point, r vg.Length) []vg.Point {
	var pts []vg.Point
	for k := 0; k <= 24; k++ {
		a := 2 * math.Pi * float64(k) / 24
		pts = append(pts, vg.Point{X: at.X + r*vg.Length(math.Cos(a)), Y: at.Y + r*vg.Length(math.Sin(a))})
	}
	return pts
}

// band returns the outline of s's range over the seeds (Lo to Hi), one
// polygon per stretch of points where X, Lo and Hi are all finite, in
// the axes' coordinates (a zero on a log axis is -Inf, for the caller to
// put on the bottom edge); nil when s has no range.
func band(s sim.Series, xs, ys string) []plotter.XYs {
	n := min(len(s.X), len(s.Lo), len(s.Hi))
	if n == 0 {
		return nil
	}
	y := func(v float64) float64 {
		if ys == scaleLog && v <= 0 {
			return math.Inf(-1)
		}
		return v
	}
	var segs []plotter.XYs
	var lo, hi plotter.XYs
	flush := func() {
		if len(lo) >= 2 {
			seg := append(plotter.XYs{}, lo...)
			for k := len(hi) - 1; k >= 0; k-- {
				seg = append(seg, hi[k])
			}
			segs = append(segs, seg)
		}
		lo, hi = nil, nil
	}
	for i := range n {
		x, l, h := s.X[i], s.Lo[i], s.Hi[i]
		if xs == scaleNines {
			x = nines(x)
		}
		if bad(x) || bad(l) || bad(h) || (xs == scaleLog && x <= 0) || (ys == scaleLog && h < 0) {
			flush()
			continue
		}
		lo, hi = append(lo, plotter.XY{X: x, Y: y(l)}), append(hi, plotter.XY{X: x, Y: y(h)})
	}
	flush()
	return segs
}

// height returns where y lies between lo (0) and hi (1) on a scale.
func height(y, lo, hi float64, s string) float64 {
	if s == scaleLog {
		y, lo, hi = math.Log10(y), math.Log10(lo), math.Log10(hi)
	}
	return (y - lo) / (hi - lo)
}

// bad reports whether v is NaN or infinite.
func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// dashes are the dash patterns of series in order, in points: solid,
// then patterns long enough to read on a noisy line.
var dashes = [][]float64{nil, {6, 3}, {1.5, 2.5}, {8, 3, 1.5, 3}, {3, 3}, {10, 4}, {1.5, 2.5, 1.5, 2.5, 6, 2.5}, {12, 3, 3, 3}}

// Dashes returns the dash pattern of the i'th series.
func Dashes(i int) []vg.Length {
	var d []vg.Length
	for _, v := range dashes[i%len(dashes)] {
		d = append(d, vg.Points(v))
	}
	return d
}

// stepTicks places a labelled tick at every multiple of its step.
type stepTicks float64

// Ticks implements plot.Ticker.
func (s stepTicks) Ticks(lo, hi float64) []plot.Tick {
	step := float64(s)
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9 && len(ts) < 100; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: Format(v)})
	}
	return ts
}

// MaxDataTicks is the most distinct X values for which the X ticks are
// the data's X values themselves.
const MaxDataTicks = 12

// dataTicks returns ticks at the X values of the points when the series
// have at most MaxDataTicks of them, so each tick falls on a
// measurement; nil otherwise.
func dataTicks(series []plotter.XYs) plot.Ticker {
	seen := map[float64]bool{}
	for _, xys := range series {
		for _, xy := range xys {
			seen[xy.X] = true
			if len(seen) > MaxDataTicks {
				return nil
			}
		}
	}
	if len(seen) < 2 {
		return nil
	}
	xs := make([]float64, 0, len(seen))
	for x := range seen {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	ts := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		ts[i] = plot.Tick{Value: x, Label: Format(x)}
	}
	return ts
}

// Format writes v as a tick label: no trailing zeros, at most six
// significant digits, and a comma between thousands: 11,708 and 0.25.
func Format(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if a := math.Abs(v); a != 0 && (a < 1e-4 || a >= 1e15) {
		return strconv.FormatFloat(v, 'g', 6, 64)
	} else if a != 0 {
		// Six significant digits, without trailing zeros.
		digits := max(0, 5-int(math.Floor(math.Log10(a))))
		s = strconv.FormatFloat(v, 'f', digits, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
	}
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// ticker returns the tick marker for an axis scale.
func ticker(s string) plot.Ticker {
	switch s {
	case scaleLog:
		return logTicks{}
	case scaleNines:
		return ninesTicks{}
	}
	return plainTicks{}
}

// plainTicks places ticks at multiples of 1, 2 or 5 times a power of ten,
// four to ten of them, labelled with Format: 25, not 25.00, and 11,708.
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	p := math.Pow(10, math.Floor(math.Log10((hi-lo)/4)))
	step := 10 * p
	for _, m := range []float64{1, 2, 5} {
		if (hi-lo)/(m*p) <= 10 {
			step = m * p
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		v = math.Round(v/step) * step
		ts = append(ts, plot.Tick{Value: v, Label: Format(v)})
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
				t.Label = Format(v)
			}
			ts = append(ts, t)
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
func finite(s sim.Series, xs, ys string) plotter.XYs {
	n := min(len(s.X), len(s.Y))
	xys := make(plotter.XYs, 0, n)
	for i := range n {
		x, y := s.X[i], s.Y[i]
		if xs == scaleNines {
			x = nines(x)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) ||
			(xs == scaleLog && x <= 0) || (ys == scaleLog && y < 0) {
			continue
		}
		if ys == scaleLog && y == 0 {
			y = math.Inf(-1) // the caller puts it on the bottom edge
		}
		xys = append(xys, plotter.XY{X: x, Y: y})
	}
	return xys
}
