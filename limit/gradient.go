package limit

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults applied to zero fields of [GradientConfig]. MinLimit, MaxLimit,
// Percentile, Buffer and MinRTTJitter are Envoy's adaptive concurrency
// gradient controller defaults (min_concurrency, max_concurrency_limit,
// sample_aggregate_percentile, buffer, jitter); UpdateInterval and
// MinRTTInterval are the concurrency_update_interval and
// min_rtt_calc_params.interval of Envoy's example configuration, which
// sets them (Envoy has no default). MinSamples, Headroom, Smoothing and
// MinRTTRequests depart from Envoy's (none, 1, 1 and 50); the package
// doc says why.
const (
	DefaultGradientInitialLimit   = 20
	DefaultGradientMinLimit       = 3
	DefaultGradientMaxLimit       = 1000
	DefaultGradientUpdateInterval = 100 * time.Millisecond
	DefaultGradientMinSamples     = 250
	DefaultGradientPercentile     = 0.5
	DefaultGradientBuffer         = 0.25
	DefaultGradientHeadroom       = 0.5
	DefaultGradientSmoothing      = 0.25
	DefaultGradientMinRTTInterval = 60 * time.Second
	DefaultGradientMinRTTJitter   = 0.15
	DefaultGradientMinRTTRequests = 600
	DefaultGradientMinRTTError    = 0.05
)

// gradientMinRTTFloor is the fewest requests a minRTT measurement takes
// however alike their latencies: Envoy's request_count.
const gradientMinRTTFloor = 50

// gradientWindow is how many latencies a window keeps: past it, the
// latest gradientWindow of the window's samples are kept.
const gradientWindow = 1024

// gradientMinRuns is how many consecutive windows may end at MinLimit
// before the minRTT is measured again (Envoy's rule: a limit stuck at
// the floor suggests a minRTT measured too low).
const gradientMinRuns = 5

// GradientConfig configures a [Gradient] algorithm. The zero value is
// Envoy's gradient controller with the departures the package doc lists.
type GradientConfig struct {
	// InitialLimit is the limit the first minRTT measurement hands over
	// to: the limit until the first window after it ends. Zero means
	// DefaultGradientInitialLimit, clamped into [MinLimit, MaxLimit].
	InitialLimit int
	// MinLimit is the lowest limit, and the limit while the minRTT is
	// measured (Envoy's min_concurrency). Zero means
	// DefaultGradientMinLimit.
	MinLimit int
	// MaxLimit is the highest limit (Envoy's max_concurrency_limit).
	// Zero means DefaultGradientMaxLimit.
	MaxLimit int
	// UpdateInterval is the shortest time between two limit updates
	// (Envoy's concurrency_update_interval). Zero means
	// DefaultGradientUpdateInterval.
	UpdateInterval time.Duration
	// MinSamples is how many latencies a window needs before it may
	// end: a window lasts at least UpdateInterval and at least
	// MinSamples samples. Envoy has no such minimum (1). Zero means
	// DefaultGradientMinSamples; it is capped at 1024.
	MinSamples int
	// Percentile, in (0, 1], summarises a window's latencies and the
	// minRTT measurement's (Envoy's sample_aggregate_percentile). Zero
	// means DefaultGradientPercentile.
	Percentile float64
	// Buffer is the share of the minRTT added to it before it is
	// compared with a window's latency: 0.25 tolerates latencies 25%
	// above the minRTT (Envoy's buffer). Zero means
	// DefaultGradientBuffer; a negative value means none.
	Buffer float64
	// Headroom scales the square root of the limit added on each update:
	// limit = limit*gradient + Headroom*sqrt(limit*gradient). Envoy's is
	// 1. Zero means DefaultGradientHeadroom; a negative value means
	// none.
	Headroom float64
	// Smoothing is the weight, in (0, 1], of each update's new limit
	// against the current one; 1 takes the new limit as is, as Envoy
	// does. Zero means DefaultGradientSmoothing.
	Smoothing float64
	// MinRTTInterval is the time between the end of one minRTT
	// measurement and the start of the next (Envoy's
	// min_rtt_calc_params.interval), before jitter. Zero means
	// DefaultGradientMinRTTInterval.
	MinRTTInterval time.Duration
	// MinRTTJitter, in [0, 1], lengthens each MinRTTInterval by a random
	// share of it drawn uniformly from [0, MinRTTJitter) (Envoy's
	// jitter). Zero means DefaultGradientMinRTTJitter; a negative value
	// means none.
	MinRTTJitter float64
	// MinRTTRequests is the most requests, started after the limit was
	// pinned to MinLimit, a minRTT measurement takes. It ends sooner, but
	// after at least 50 requests (Envoy's request_count), once the
	// standard error of its median is within MinRTTError of it. Zero
	// means DefaultGradientMinRTTRequests; it is capped at 1024.
	MinRTTRequests int
	// MinRTTError is the relative standard error of the measured median
	// at which a minRTT measurement may end before MinRTTRequests: the
	// more the latencies spread, the more requests it takes. It is
	// estimated as 1.2533 times the standard deviation of the
	// latencies' logarithms over the square root of their number (the
	// median's standard error for a lognormal spread). Zero means
	// DefaultGradientMinRTTError; a negative value means the
	// measurement always takes MinRTTRequests.
	MinRTTError float64
	// Rand draws the jitter. Nil means a draw derived from the time of
	// the sample that ends each measurement (a hash of its nanoseconds),
	// which differs between processes and is the same for the same
	// samples.
	Rand rand.Source
}

func (c *GradientConfig) withDefaults() GradientConfig {
	d := GradientConfig{
		MinLimit:       cmp.Or(c.MinLimit, DefaultGradientMinLimit),
		MaxLimit:       cmp.Or(c.MaxLimit, DefaultGradientMaxLimit),
		UpdateInterval: cmp.Or(c.UpdateInterval, DefaultGradientUpdateInterval),
		MinSamples:     min(cmp.Or(c.MinSamples, DefaultGradientMinSamples), gradientWindow),
		Percentile:     cmp.Or(c.Percentile, DefaultGradientPercentile),
		Buffer:         max(cmp.Or(c.Buffer, DefaultGradientBuffer), 0),
		Headroom:       max(cmp.Or(c.Headroom, DefaultGradientHeadroom), 0),
		Smoothing:      cmp.Or(c.Smoothing, DefaultGradientSmoothing),
		MinRTTInterval: cmp.Or(c.MinRTTInterval, DefaultGradientMinRTTInterval),
		MinRTTJitter:   max(cmp.Or(c.MinRTTJitter, DefaultGradientMinRTTJitter), 0),
		MinRTTRequests: min(cmp.Or(c.MinRTTRequests, DefaultGradientMinRTTRequests), gradientWindow),
		MinRTTError:    cmp.Or(c.MinRTTError, DefaultGradientMinRTTError),
		Rand:           c.Rand,
	}
	d.InitialLimit = min(max(cmp.Or(c.InitialLimit, DefaultGradientInitialLimit), d.MinLimit), d.MaxLimit)
	return d
}

// Validate reports settings that cannot work, naming the field.
func (c *GradientConfig) Validate() error {
	d := c.withDefaults()
	if err := checkLimits("Gradient", c.InitialLimit, c.MinLimit, c.MaxLimit, d.MinLimit, d.MaxLimit); err != nil {
		return err
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.UpdateInterval < 0:
		return fmt.Errorf("%w: Gradient UpdateInterval %v is negative", ErrInvalidConfig, c.UpdateInterval)
	case c.MinSamples < 0:
		return fmt.Errorf("%w: Gradient MinSamples %d is negative", ErrInvalidConfig, c.MinSamples)
	case !(d.Percentile > 0 && d.Percentile <= 1):
		return fmt.Errorf("%w: Gradient Percentile %v is outside (0, 1]", ErrInvalidConfig, c.Percentile)
	case !finite(c.Buffer):
		return fmt.Errorf("%w: Gradient Buffer %v is not a number", ErrInvalidConfig, c.Buffer)
	case !finite(c.Headroom):
		return fmt.Errorf("%w: Gradient Headroom %v is not a number", ErrInvalidConfig, c.Headroom)
	case !(d.Smoothing > 0 && d.Smoothing <= 1):
		return fmt.Errorf("%w: Gradient Smoothing %v is outside (0, 1]", ErrInvalidConfig, c.Smoothing)
	case c.MinRTTInterval < 0:
		return fmt.Errorf("%w: Gradient MinRTTInterval %v is negative", ErrInvalidConfig, c.MinRTTInterval)
	case !(d.MinRTTJitter <= 1) || math.IsNaN(c.MinRTTJitter):
		return fmt.Errorf("%w: Gradient MinRTTJitter %v is above 1", ErrInvalidConfig, c.MinRTTJitter)
	case c.MinRTTRequests < 0:
		return fmt.Errorf("%w: Gradient MinRTTRequests %d is negative", ErrInvalidConfig, c.MinRTTRequests)
	case !finite(c.MinRTTError):
		return fmt.Errorf("%w: Gradient MinRTTError %v is not a number", ErrInvalidConfig, c.MinRTTError)
	}
	return nil
}

// Gradient is Envoy's adaptive concurrency gradient controller
// (https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/adaptive_concurrency_filter),
// with the departures the package doc lists. It measures an ideal
// latency, the minRTT, as the Percentile of the latencies of
// MinRTTRequests requests run while the limit is pinned to MinLimit, and
// measures it again every MinRTTInterval (plus jitter). Between
// measurements, each window of at least UpdateInterval and MinSamples
// samples ends with
//
//	gradient = clamp((1+Buffer)*minRTT / sampleRTT, 0.5, 2)
//	next     = limit*gradient + Headroom*sqrt(limit*gradient)
//	limit    = (1-Smoothing)*limit + Smoothing*next
//
// clamped into [MinLimit, MaxLimit], where sampleRTT is the window's
// Percentile latency. The limit does not grow from a window in which
// fewer than half of it were ever in flight. A drop is a sample like a
// served request, its RTT the time until it was dropped.
//
// Time comes only from [Sample.Now]: a window ends at the first sample
// past its end, and a measurement starts at the first sample past its
// due time. Update allocates nothing.
type Gradient struct {
	cfg   GradientConfig
	limit float64

	measuring bool
	pinned    bool      // the measurement has pinned the limit to MinLimit
	skipped   int       // samples the measurement passed over before it pinned
	deferred  float64   // the limit to restore after the measurement
	epoch     time.Time // the measurement's (or its pin's) start: older requests do not count
	nextRTT   time.Time // when the next measurement is due
	minRTT    float64   // nanoseconds; 0 before the first measurement

	start   time.Time // the window's start
	started bool      // start is set
	peak    int       // the highest in-flight count in the window
	atMin   int       // consecutive windows that ended at MinLimit
	logSum  float64   // the measurement's sum of log latencies
	logSq   float64   // and of their squares
	n       int       // samples recorded in the window
	rtts    [gradientWindow]time.Duration
}

// NewGradient returns a Gradient algorithm at InitialLimit that starts
// by measuring the minRTT.
func NewGradient(cfg GradientConfig) (*Gradient, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.withDefaults()
	return &Gradient{cfg: d, limit: float64(d.InitialLimit), deferred: float64(d.InitialLimit), measuring: true}, nil
}

// Limit returns the current limit.
func (g *Gradient) Limit() int { return int(g.limit) }

// Measuring reports whether a minRTT measurement has pinned the limit
// to MinLimit.
func (g *Gradient) Measuring() bool { return g.pinned }

// Update applies one sample and returns the new limit.
func (g *Gradient) Update(s Sample) int {
	if g.measuring {
		if s.Now.Add(-s.RTT).Before(g.epoch) {
			return int(g.limit) // started before the measurement or its pin
		}
		if s.InFlight > g.cfg.MinLimit {
			// Admitted among more than MinLimit: it may have queued.
			if g.skipped++; g.skipped >= g.cfg.MinRTTRequests {
				g.pinned = true
				g.limit = float64(g.cfg.MinLimit)
				g.epoch = s.Now
			}
			return int(g.limit)
		}
		g.record(s)
		l := math.Log(float64(max(s.RTT, time.Microsecond)))
		g.logSum += l
		g.logSq += l * l
		if g.n >= g.cfg.MinRTTRequests || g.n >= gradientMinRTTFloor && g.precise() {
			g.minRTT = g.percentile()
			g.measuring, g.pinned = false, false
			g.limit = g.deferred
			g.nextRTT = s.Now.Add(g.cfg.MinRTTInterval + g.jitter(s.Now))
			g.reset(s.Now)
		}
		return int(g.limit)
	}
	if !s.Now.Before(g.nextRTT) {
		g.measure(s.Now)
		return int(g.limit)
	}
	if !g.started {
		g.reset(s.Now)
	}
	g.record(s)
	if s.Now.Sub(g.start) < g.cfg.UpdateInterval || g.n < g.cfg.MinSamples {
		return int(g.limit)
	}
	sampleRTT := max(g.percentile(), 1)
	gradient := max(0.5, min(2, (1+g.cfg.Buffer)*g.minRTT/sampleRTT))
	next := g.limit * gradient
	next += g.cfg.Headroom * math.Sqrt(next)
	if next > g.limit && float64(g.peak) < g.limit/2 {
		next = g.limit // not enough demand to show the limit is too low
	}
	next = g.limit*(1-g.cfg.Smoothing) + next*g.cfg.Smoothing
	g.limit = max(float64(g.cfg.MinLimit), min(float64(g.cfg.MaxLimit), next))
	g.reset(s.Now)
	if int(g.limit) > g.cfg.MinLimit {
		g.atMin = 0
	} else if g.atMin++; g.atMin >= gradientMinRuns {
		g.measure(s.Now)
	}
	return int(g.limit)
}

// precise reports whether the measurement's median is known within
// MinRTTError: 1.2533*sd/sqrt(n) of the log latencies, the median's
// asymptotic standard error for a normal spread of them.
func (g *Gradient) precise() bool {
	n := float64(g.n)
	mean := g.logSum / n
	v := max(g.logSq/n-mean*mean, 0)
	return g.cfg.MinRTTError > 0 && 1.2533*math.Sqrt(v/n) <= g.cfg.MinRTTError
}

// measure starts a minRTT measurement at now, which pins the limit to
// MinLimit once it has passed over MinRTTRequests samples.
func (g *Gradient) measure(now time.Time) {
	g.measuring = true
	g.deferred = g.limit
	g.epoch = now
	g.atMin, g.skipped = 0, 0
	g.logSum, g.logSq = 0, 0
	g.reset(now)
}

// reset starts a new window at now.
func (g *Gradient) reset(now time.Time) {
	g.start, g.started = now, true
	g.n, g.peak = 0, 0
}

// record adds s to the window, overwriting the oldest latency once the
// window holds gradientWindow of them.
func (g *Gradient) record(s Sample) {
	g.rtts[g.n%gradientWindow] = max(s.RTT, 0)
	g.n++
	g.peak = max(g.peak, s.InFlight)
}

// percentile returns the Percentile of the window's latencies, in
// nanoseconds: the smallest whose 1-based rank is at least
// ceil(Percentile*n). It reorders the window.
func (g *Gradient) percentile() float64 {
	n := min(g.n, gradientWindow)
	if n == 0 {
		return 0
	}
	k := max(int(math.Ceil(g.cfg.Percentile*float64(n)))-1, 0)
	return float64(nthElement(g.rtts[:n], min(k, n-1)))
}

// jitter returns a share of MinRTTInterval drawn uniformly from [0,
// MinRTTJitter), from Rand or else from a hash of now.
func (g *Gradient) jitter(now time.Time) time.Duration {
	if g.cfg.MinRTTJitter == 0 {
		return 0
	}
	var u uint64
	if g.cfg.Rand != nil {
		u = g.cfg.Rand.Uint64()
	} else {
		u = splitmix64(uint64(now.UnixNano()))
	}
	f := float64(u>>11) / (1 << 53)
	return time.Duration(f * g.cfg.MinRTTJitter * float64(g.cfg.MinRTTInterval))
}

// splitmix64 is the finaliser of Steele, Lea and Flood's SplitMix64: a
// bijection of x whose bits all depend on all of x's.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// nthElement reorders a so that a[k] is the element a sorted copy would
// hold there, and returns it (Hoare's selection, median-of-three pivot).
func nthElement(a []time.Duration, k int) time.Duration {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}
