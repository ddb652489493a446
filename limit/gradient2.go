package limit

import (
	"cmp"
	"fmt"
	"math"
)

// Defaults applied to zero fields of [Gradient2Config]. InitialLimit
// and MaxLimit are Netflix concurrency-limits' Gradient2Limit defaults;
// the others differ from Netflix's (MinLimit 20, Smoothing 0.2,
// Tolerance 1.5, LongWindow 600, QueueSize 4, and each sample compared
// alone, a ShortWindow of 1), for the reasons the package doc gives.
const (
	DefaultGradient2InitialLimit = 20
	DefaultGradient2MinLimit     = 1
	DefaultGradient2MaxLimit     = 200
	DefaultGradient2Smoothing    = 0.02
	DefaultGradient2Tolerance    = 1.2
	DefaultGradient2LongWindow   = 30000
	DefaultGradient2QueueSize    = 1.5
	DefaultGradient2ShortWindow  = 10
)

// gradient2Warmup is how many samples the long-term RTT averages plainly
// before it becomes an exponential average (Netflix's warm-up window).
const gradient2Warmup = 10

// Gradient2Config configures a [Gradient2] algorithm. The zero value
// starts at 20 and stays within [1, 200].
type Gradient2Config struct {
	// InitialLimit is the limit before the first sample. Zero means
	// DefaultGradient2InitialLimit, clamped into [MinLimit, MaxLimit].
	InitialLimit int
	// MinLimit and MaxLimit bound the limit. Zero means
	// DefaultGradient2MinLimit and DefaultGradient2MaxLimit.
	MinLimit, MaxLimit int
	// Smoothing is the weight of each update's new estimate against the
	// current limit, in (0, 1]. Zero means DefaultGradient2Smoothing.
	Smoothing float64
	// Tolerance is how far the short-term RTT may exceed the long-term
	// one before the limit falls: 1.5 tolerates 50%. It must be at least
	// 1. Zero means DefaultGradient2Tolerance.
	Tolerance float64
	// LongWindow is the number of samples the long-term RTT averages
	// over (an exponential average with factor 2/(LongWindow+1)). Zero
	// means DefaultGradient2LongWindow.
	LongWindow int
	// ShortWindow is the number of samples the short-term RTT averages
	// over (an exponential average with factor 2/(ShortWindow+1)); 1
	// compares each sample alone, as Netflix's does. Zero means
	// DefaultGradient2ShortWindow.
	ShortWindow int
	// QueueSize is added to the limit on each update: the headroom that
	// lets the limit grow while latency holds, and the queue it allows.
	// Zero means DefaultGradient2QueueSize; a negative value means none.
	QueueSize float64
}

func (c *Gradient2Config) withDefaults() Gradient2Config {
	d := Gradient2Config{
		MinLimit:    cmp.Or(c.MinLimit, DefaultGradient2MinLimit),
		MaxLimit:    cmp.Or(c.MaxLimit, DefaultGradient2MaxLimit),
		Smoothing:   cmp.Or(c.Smoothing, DefaultGradient2Smoothing),
		Tolerance:   cmp.Or(c.Tolerance, DefaultGradient2Tolerance),
		LongWindow:  cmp.Or(c.LongWindow, DefaultGradient2LongWindow),
		ShortWindow: cmp.Or(c.ShortWindow, DefaultGradient2ShortWindow),
		QueueSize:   max(cmp.Or(c.QueueSize, DefaultGradient2QueueSize), 0),
	}
	d.InitialLimit = min(max(cmp.Or(c.InitialLimit, DefaultGradient2InitialLimit), d.MinLimit), d.MaxLimit)
	return d
}

// Validate reports settings that cannot work, naming the field.
func (c *Gradient2Config) Validate() error {
	d := c.withDefaults()
	if err := checkLimits("Gradient2", c.InitialLimit, c.MinLimit, c.MaxLimit, d.MinLimit, d.MaxLimit); err != nil {
		return err
	}
	switch {
	case !(d.Smoothing > 0 && d.Smoothing <= 1):
		return fmt.Errorf("%w: Gradient2 Smoothing %v is outside (0, 1]", ErrInvalidConfig, c.Smoothing)
	case !(d.Tolerance >= 1):
		return fmt.Errorf("%w: Gradient2 Tolerance %v is below 1", ErrInvalidConfig, c.Tolerance)
	case c.LongWindow < 0:
		return fmt.Errorf("%w: Gradient2 LongWindow %d is negative", ErrInvalidConfig, c.LongWindow)
	case c.ShortWindow < 0:
		return fmt.Errorf("%w: Gradient2 ShortWindow %d is negative", ErrInvalidConfig, c.ShortWindow)
	case math.IsNaN(c.QueueSize) || math.IsInf(c.QueueSize, 0):
		return fmt.Errorf("%w: Gradient2 QueueSize %v is not a number", ErrInvalidConfig, c.QueueSize)
	}
	return nil
}

// Gradient2 is Netflix concurrency-limits' Gradient2Limit: it compares a
// long-term exponential average of the RTT with the latest sample and
// shrinks the limit in proportion when the sample is slower than the
// average by more than Tolerance:
//
//	gradient = clamp(Tolerance * longRTT / RTT, 0.5, 1)
//	limit    = (1-Smoothing)*limit + Smoothing*(limit*gradient + QueueSize)
//
// clamped into [MinLimit, MaxLimit]. The limit does not grow while fewer
// than half of it are in flight, and when the long-term average is more
// than twice the latest sample (latency fell back after a long overload)
// the average is cut by 5% per sample so it does not hold the limit up.
// A drop is a sample like a served request, its RTT the time until it
// was dropped, as in Netflix's.
type Gradient2 struct {
	cfg      Gradient2Config
	limit    float64
	longRTT  float64 // nanoseconds
	shortRTT float64 // nanoseconds
	longVar  float64 // the samples' variance about longRTT, nanoseconds squared
	samples  int
}

// NewGradient2 returns a Gradient2 algorithm at its initial limit.
func NewGradient2(cfg Gradient2Config) (*Gradient2, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.withDefaults()
	return &Gradient2{cfg: d, limit: float64(d.InitialLimit)}, nil
}

// Limit returns the current limit.
func (g *Gradient2) Limit() int { return int(g.limit) }

// Update applies one sample and returns the new limit.
func (g *Gradient2) Update(s Sample) int {
	rtt := float64(max(s.RTT, 1))
	if g.samples < gradient2Warmup {
		g.samples++
		d := rtt - g.longRTT
		g.longRTT += d / float64(g.samples)
		g.longVar += (d*(rtt-g.longRTT) - g.longVar) / float64(g.samples)
		g.shortRTT = g.longRTT
	} else {
		f := 2 / float64(g.cfg.LongWindow+1)
		d := rtt - g.longRTT
		g.longRTT += f * d
		g.longVar = (1 - f) * (g.longVar + f*d*d)
		f = 2 / float64(g.cfg.ShortWindow+1)
		g.shortRTT = g.shortRTT*(1-f) + rtt*f
	}
	rtt = g.shortRTT
	// The short average's standard error is sd/sqrt(ShortWindow): a fall
	// within three of them is noise, not the end of an overload.
	if g.longRTT/rtt > 2 && g.longRTT-rtt > 3*math.Sqrt(g.longVar/float64(g.cfg.ShortWindow)) {
		g.longRTT *= 0.95
	}
	if float64(s.InFlight) < g.limit/2 {
		return int(g.limit)
	}
	gradient := max(0.5, min(1, g.cfg.Tolerance*g.longRTT/rtt))
	next := g.limit*gradient + g.cfg.QueueSize
	next = g.limit*(1-g.cfg.Smoothing) + next*g.cfg.Smoothing
	g.limit = max(float64(g.cfg.MinLimit), min(float64(g.cfg.MaxLimit), next))
	return int(g.limit)
}
