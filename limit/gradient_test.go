package limit

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/lognormal"
)

// fixedSource is a rand.Source that always returns v.
type fixedSource uint64

func (f fixedSource) Uint64() uint64 { return uint64(f) }

// measured returns a Gradient whose first minRTT measurement has ended at
// epoch with a minRTT of 20 ms (the median of 10, 20, 30 and 40 ms), at
// MinLimit 2, with windows of at least 100 ms and one sample. The
// samples were admitted with MinLimit in flight, so the measurement took
// them without pinning the limit, which stayed at InitialLimit.
func measured(t *testing.T, cfg GradientConfig) *Gradient {
	t.Helper()
	cfg.MinLimit, cfg.MinRTTRequests, cfg.MinSamples = 2, 4, 1
	g, err := NewGradient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	initial := g.Limit()
	for i, ms := range []time.Duration{40, 10, 30, 20} {
		if !g.measuring || g.Measuring() {
			t.Fatalf("sample %d: measuring %v, pinned %v; want a measurement that has not pinned the limit", i, g.measuring, g.Measuring())
		}
		if got := g.Update(Sample{RTT: ms * time.Millisecond, InFlight: 2, Now: epoch}); got != initial {
			t.Fatalf("sample %d while measuring: limit %d, want InitialLimit %d", i, got, initial)
		}
	}
	if g.measuring || g.minRTT != float64(20*time.Millisecond) {
		t.Fatalf("after 4 samples: measuring %v, minRTT %v, want false and 20ms", g.measuring, time.Duration(g.minRTT))
	}
	return g
}

// A new Gradient starts at InitialLimit (20 by default) and measures its
// minRTT from the requests admitted with at most MinLimit in flight; it
// pins the limit to MinLimit only after MinRTTRequests others have
// ended first, and hands back the limit it had when the measurement
// ends.
func TestGradientFirstMeasurement(t *testing.T) {
	ms := time.Millisecond
	g, err := NewGradient(GradientConfig{MinRTTRequests: 100, MinRTTError: -1})
	if err != nil {
		t.Fatal(err)
	}
	if g.Limit() != DefaultGradientInitialLimit || g.Measuring() {
		t.Fatalf("new: limit %d, pinned %v; want %d, false", g.Limit(), g.Measuring(), DefaultGradientInitialLimit)
	}
	now := epoch
	for i := range 99 {
		now = now.Add(ms)
		if got := g.Update(Sample{RTT: 50 * ms, InFlight: 10, Now: now}); got != 20 || g.Measuring() {
			t.Fatalf("busy sample %d: limit %d, pinned %v; want 20 and not pinned", i, got, g.Measuring())
		}
	}
	now = now.Add(ms)
	if got := g.Update(Sample{RTT: 50 * ms, InFlight: 10, Now: now}); got != DefaultGradientMinLimit || !g.Measuring() {
		t.Fatalf("100th busy sample: limit %d, pinned %v; want MinLimit %d, pinned", got, g.Measuring(), DefaultGradientMinLimit)
	}
	// Started before the pin: passed over, however fast.
	g.Update(Sample{RTT: 5 * ms, InFlight: 1, Now: now.Add(ms)})
	for i := range 100 {
		now = now.Add(11 * ms)
		g.Update(Sample{RTT: 10 * ms, InFlight: 3, Now: now})
		if i < 99 && !g.Measuring() {
			t.Fatalf("the measurement ended after %d samples, want 100", i+1)
		}
	}
	if g.Measuring() || g.Limit() != 20 || g.minRTT != float64(10*ms) {
		t.Errorf("after the measurement: pinned %v, limit %d, minRTT %v; want false, 20, 10ms", g.Measuring(), g.Limit(), time.Duration(g.minRTT))
	}
}

// A measurement ends once its median's standard error is within
// MinRTTError, and after at least 50 requests: alike latencies end it at
// 50, spread ones (lognormal, sigma 1) after about (1.2533/0.05)^2 =
// 628, capped at MinRTTRequests.
func TestGradientMeasurementPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range []struct {
		name     string
		sigma    float64
		requests int
		lo, hi   int
	}{
		{"alike", 0, 0, 50, 50},
		{"sigma 0.5", 0.5, 1024, 100, 220},
		{"sigma 1", 1, 1024, 500, 760},
		{"sigma 1, capped", 1, 300, 300, 300},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := NewGradient(GradientConfig{MinRTTRequests: tt.requests})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for g.measuring && n < 2000 {
				n++
				rtt := lognormal.Draw(rng, 20*time.Millisecond, tt.sigma)
				g.Update(Sample{RTT: rtt, InFlight: 1, Now: epoch.Add(time.Duration(n) * 30 * time.Millisecond)})
			}
			if n < tt.lo || n > tt.hi {
				t.Errorf("the measurement took %d requests, want %d to %d", n, tt.lo, tt.hi)
			}
		})
	}
}

func TestGradientUpdate(t *testing.T) {
	ms := time.Millisecond
	none := GradientConfig{Headroom: -1, Smoothing: 1, MinRTTJitter: -1}
	tests := []struct {
		name    string
		cfg     GradientConfig
		limit   float64
		samples []Sample // relative to epoch; the last one ends the window
		want    int
	}{
		// minRTT 20 ms, window median 10 ms: 1.25*20/10 = 2.5, clamped
		// to 2: 2*2 = 4.
		{"fast window doubles", none, 2, []Sample{{RTT: 10 * ms, InFlight: 2, Now: epoch.Add(50 * ms)}, {RTT: 10 * ms, InFlight: 2, Now: epoch.Add(100 * ms)}}, 4},
		// A window shorter than UpdateInterval does not end.
		{"window not over", none, 2, []Sample{{RTT: 10 * ms, InFlight: 2, Now: epoch.Add(99 * ms)}}, 2},
		// Median 25 ms: 1.25*20/25 = 1; 10*1 = 10.
		{"at the buffer holds", none, 10, []Sample{{RTT: 25 * ms, InFlight: 10, Now: epoch.Add(100 * ms)}}, 10},
		// Median 100 ms: 1.25*20/100 = 0.25, clamped to 0.5: 5.
		{"slow window halves", none, 10, []Sample{{RTT: 100 * ms, InFlight: 10, Now: epoch.Add(100 * ms)}}, 5},
		// Envoy's rule: gradient 1, 16 + sqrt(16) = 20.
		{"Envoy's headroom", GradientConfig{Headroom: 1, Smoothing: 1}, 16, []Sample{{RTT: 25 * ms, InFlight: 16, Now: epoch.Add(100 * ms)}}, 20},
		// Half the headroom, smoothing 0.25: 16 + 0.25*(0.5*4) = 16.5.
		{"defaults", GradientConfig{}, 16, []Sample{{RTT: 25 * ms, InFlight: 16, Now: epoch.Add(100 * ms)}}, 16},
		// Smoothing 0.5, gradient 0.5: 16*0.5 + 8*0.5 = 12.
		{"smoothed", GradientConfig{Headroom: -1, Smoothing: 0.5}, 16, []Sample{{RTT: 100 * ms, InFlight: 16, Now: epoch.Add(100 * ms)}}, 12},
		// Fewer than half of 10 ever in flight: the gradient of 2 is
		// not applied.
		{"app-limited holds", none, 10, []Sample{{RTT: 10 * ms, InFlight: 4, Now: epoch.Add(100 * ms)}}, 10},
		// ...but a slow window still lowers it.
		{"app-limited falls", none, 10, []Sample{{RTT: 100 * ms, InFlight: 4, Now: epoch.Add(100 * ms)}}, 5},
		// 8 * 2 = 16, clamped to MaxLimit 12.
		{"ceiling at MaxLimit", GradientConfig{Headroom: -1, Smoothing: 1, MaxLimit: 12}, 8, []Sample{{RTT: 10 * ms, InFlight: 8, Now: epoch.Add(100 * ms)}}, 12},
		// 3 * 0.5 = 1.5, clamped to MinLimit 2.
		{"floor at MinLimit", none, 3, []Sample{{RTT: 100 * ms, InFlight: 3, Now: epoch.Add(100 * ms)}}, 2},
		// A drop is a sample: its 100 ms RTT halves the limit.
		{"drop", none, 10, []Sample{{RTT: 100 * ms, InFlight: 10, Dropped: true, Now: epoch.Add(100 * ms)}}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := measured(t, tt.cfg)
			g.limit = tt.limit
			got := 0
			for _, s := range tt.samples {
				got = g.Update(s)
			}
			if got != tt.want || g.Limit() != tt.want {
				t.Errorf("Update = %d, Limit = %d, want %d", got, g.Limit(), tt.want)
			}
		})
	}
}

// The minRTT is measured again MinRTTInterval plus jitter after the last
// measurement ended: requests admitted with more than MinLimit in flight
// are passed over until MinRTTRequests of them have, then the limit is
// pinned to MinLimit, requests started before the pin are not samples,
// and the limit comes back when the measurement ends.
func TestGradientRemeasure(t *testing.T) {
	ms := time.Millisecond
	// Jitter: half of 15% of 60 s is 4.5 s.
	g := measured(t, GradientConfig{Rand: fixedSource(1 << 63), Headroom: -1, Smoothing: 1})
	g.limit = 10
	due := epoch.Add(64500 * ms)
	if got := g.Update(Sample{RTT: 25 * ms, InFlight: 10, Now: due.Add(-ms)}); got != 10 || g.measuring {
		t.Fatalf("1 ms before due: limit %d, measuring %v, want 10 and false", got, g.measuring)
	}
	// The sample that finds the measurement due starts it; the next four
	// are passed over, and the fourth pins the limit.
	for i := range 5 {
		got := g.Update(Sample{RTT: 25 * ms, InFlight: 10, Now: due.Add(time.Duration(i) * 30 * ms)})
		if !g.measuring || (i < 4) != (got == 10) || g.Measuring() != (i == 4) {
			t.Fatalf("busy sample %d from due: limit %d, measuring %v, pinned %v; want the pin to MinLimit 2 at the 5th", i, got, g.measuring, g.Measuring())
		}
	}
	pin := due.Add(120 * ms)
	// Started 1 ms before the pin: ignored, even very fast.
	g.Update(Sample{RTT: 2 * ms, InFlight: 2, Now: pin.Add(ms)})
	for i, rtt := range []time.Duration{50, 30, 40, 60} {
		g.Update(Sample{RTT: rtt * ms, InFlight: 2, Now: pin.Add((rtt + 1) * ms)})
		if i < 3 && !g.Measuring() {
			t.Fatalf("after %d samples: the measurement ended, want 4", i+1)
		}
	}
	if g.measuring || g.Limit() != 10 || g.minRTT != float64(40*ms) {
		t.Errorf("after the measurement: measuring %v, limit %d, minRTT %v; want false, 10, 40ms", g.measuring, g.Limit(), time.Duration(g.minRTT))
	}
}

// Five consecutive windows ending at MinLimit start a measurement at
// once (Envoy's rule).
func TestGradientStuckAtMin(t *testing.T) {
	g := measured(t, GradientConfig{Headroom: -1, Smoothing: 1})
	g.limit = 2
	now := epoch
	for i := range gradientMinRuns {
		if g.measuring {
			t.Fatalf("measuring after %d windows at MinLimit, want %d", i, gradientMinRuns)
		}
		now = now.Add(100 * time.Millisecond)
		g.Update(Sample{RTT: time.Second, InFlight: 2, Now: now})
	}
	if !g.measuring {
		t.Errorf("not measuring after %d windows at MinLimit", gradientMinRuns)
	}
}

// Without Rand, the jitter is a function of the time of the sample that
// ends the measurement: the same time, the same jitter, within [0,
// MinRTTJitter*MinRTTInterval).
func TestGradientJitterDerived(t *testing.T) {
	g, _ := NewGradient(GradientConfig{})
	seen := map[time.Duration]bool{}
	for i := range 100 {
		now := epoch.Add(time.Duration(i) * time.Millisecond)
		j := g.jitter(now)
		if j != g.jitter(now) || j < 0 || j >= 9*time.Second {
			t.Fatalf("jitter(%v) = %v, want the same each call and within [0, 9s)", now, j)
		}
		seen[j] = true
	}
	if len(seen) < 90 {
		t.Errorf("100 times gave %d distinct jitters, want them to differ", len(seen))
	}
}

func TestNthElement(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 60; n++ {
		for range 20 {
			a := make([]time.Duration, n)
			for i := range a {
				a[i] = time.Duration(rng.IntN(8)) // many ties
			}
			sorted := slices.Sorted(slices.Values(a))
			k := rng.IntN(n)
			if got := nthElement(a, k); got != sorted[k] {
				t.Fatalf("nthElement(%v, %d) = %v, want %v", a, k, got, sorted[k])
			}
		}
	}
}

func TestGradientValidate(t *testing.T) {
	row := configtest.Row[GradientConfig]
	configtest.Check(t, ErrInvalidConfig, configtest.New(NewGradient), []configtest.Case[GradientConfig]{
		row("negative InitialLimit", GradientConfig{InitialLimit: -1}, false),
		row("negative MinLimit", GradientConfig{MinLimit: -1}, false),
		row("MaxLimit below MinLimit", GradientConfig{MinLimit: 5, MaxLimit: 4}, false),
		row("negative UpdateInterval", GradientConfig{UpdateInterval: -1}, false),
		row("negative MinSamples", GradientConfig{MinSamples: -1}, false),
		row("Percentile above 1", GradientConfig{Percentile: 1.5}, false),
		row("NaN Buffer", GradientConfig{Buffer: math.NaN()}, false),
		row("infinite Headroom", GradientConfig{Headroom: math.Inf(1)}, false),
		row("Smoothing above 1", GradientConfig{Smoothing: 2}, false),
		row("negative MinRTTInterval", GradientConfig{MinRTTInterval: -1}, false),
		row("MinRTTJitter above 1", GradientConfig{MinRTTJitter: 1.5}, false),
		row("negative MinRTTRequests", GradientConfig{MinRTTRequests: -1}, false),
		row("NaN MinRTTError", GradientConfig{MinRTTError: math.NaN()}, false),
	})
	if err := (&GradientConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

func TestGradientUpdateAllocs(t *testing.T) {
	g, _ := NewGradient(GradientConfig{MinRTTRequests: 10, MinSamples: 10})
	now := epoch
	allocs := testing.AllocsPerRun(10000, func() {
		now = now.Add(time.Millisecond)
		g.Update(Sample{RTT: 10 * time.Millisecond, InFlight: g.Limit(), Now: now})
	})
	if allocs != 0 {
		t.Errorf("Update allocates %v times, want 0", allocs)
	}
}

// FuzzGradientUpdate feeds arbitrary samples, at arbitrary steps of
// time (backwards too), to a Gradient with short windows and
// measurements: the limit stays within [MinLimit, MaxLimit].
func FuzzGradientUpdate(f *testing.F) {
	f.Add(int64(10e6), 5, false, int64(1), int64(1e6), 300)
	f.Add(int64(0), 0, true, int64(-5), int64(-1e9), 10)
	f.Add(int64(1<<62), 1<<30, false, int64(1<<62), int64(1<<40), 1000)
	f.Fuzz(func(t *testing.T, rtt int64, inFlight int, dropped bool, rtt2, step int64, n int) {
		g, err := NewGradient(GradientConfig{MinLimit: 2, MaxLimit: 50, MinSamples: 3, MinRTTRequests: 5,
			UpdateInterval: time.Millisecond, MinRTTInterval: 50 * time.Millisecond, Rand: fixedSource(rtt2)})
		if err != nil {
			t.Fatal(err)
		}
		now := epoch
		for i := range min(max(n, 1), 2000) {
			now = now.Add(time.Duration(step))
			s := Sample{RTT: time.Duration(rtt), InFlight: inFlight, Dropped: dropped, Now: now}
			if i%2 == 1 {
				s.RTT = time.Duration(rtt2)
			}
			if got := g.Update(s); got < 2 || got > 50 || got != g.Limit() {
				t.Fatalf("Update(%+v) = %d (Limit %d), want within [2, 50]", s, got, g.Limit())
			}
		}
	})
}
