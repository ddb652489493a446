package timeout

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/lognormal"
	"github.com/unherd/unherd/internal/quantile"
	"github.com/unherd/unherd/internal/swarm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t testing.TB, cfg Config) *Adaptive { return configtest.Must(New(cfg))(t) }

func TestValidate(t *testing.T) {
	row := configtest.Row[Config]
	configtest.Check(t, ErrInvalidConfig, configtest.New(New), []configtest.Case[Config]{
		row("zero", Config{}, true),
		row("p99", Config{FalseTimeoutRate: 0.01}, true),
		row("rate above one half", Config{FalseTimeoutRate: 0.6}, false),
		row("negative rate", Config{FalseTimeoutRate: -0.1}, false),
		row("NaN rate", Config{FalseTimeoutRate: math.NaN()}, false),
		row("margin below 1", Config{Margin: 0.9}, false),
		row("margin 1", Config{Margin: 1}, true),
		row("NaN margin", Config{Margin: math.NaN()}, false),
		row("negative floor", Config{Floor: -1}, false),
		row("negative ceiling", Config{Ceiling: -1}, false),
		row("negative initial", Config{Initial: -1}, false),
		row("negative window", Config{Window: -1}, false),
		row("negative WidenAfter", Config{WidenAfter: -1}, false),
		row("huge window", Config{Window: 1 << 31}, false),
		row("floor above default ceiling", Config{Floor: time.Minute}, false),
		row("floor above ceiling", Config{Floor: time.Second, Ceiling: time.Millisecond}, false),
	})
}

// TestAttemptTimeout walks the defaults: the ceiling while warming up,
// then 1.5 x p99.9, bounded.
func TestAttemptTimeout(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		samples int
		latency time.Duration // every sample
		want    time.Duration
	}{
		{"no samples: the ceiling", Config{}, 0, 0, DefaultCeiling},
		{"warming up: Initial", Config{Initial: time.Second}, 2048, 20 * time.Millisecond, time.Second},
		{"4096 samples: 1.5 x p99.9", Config{}, 4096, 20 * time.Millisecond, 30 * time.Millisecond},
		{"floor", Config{}, 4096, time.Millisecond, DefaultFloor},
		{"ceiling", Config{}, 4096, 9 * time.Second, DefaultCeiling},
		{"p99 needs 400 samples", Config{FalseTimeoutRate: 0.01, Margin: 2}, 512, 20 * time.Millisecond, 40 * time.Millisecond},
		{"failures are not observed", Config{}, 0, 0, DefaultCeiling},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, tc.cfg)
			for range tc.samples {
				a.Observe(tc.latency, true)
			}
			for range 5000 {
				a.Observe(time.Millisecond, false)
			}
			got := a.AttemptTimeout()
			if math.Abs(float64(got-tc.want)) > 0.01*float64(tc.want) {
				t.Errorf("AttemptTimeout() = %v, want %v (within 1%%)", got, tc.want)
			}
		})
	}
}

// TestFalseTimeoutRate checks the method: with margin 1 the timeout is the
// p99.9 of recent latencies, so about 0.1% of fresh attempts from the same
// distribution exceed it; with the default margin, far fewer do.
func TestFalseTimeoutRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		margin   float64
		min, max float64 // bounds on the share of fresh attempts over the timeout
	}{
		{"margin 1", 1, 0.0003, 0.003},
		{"default margin 1.5", 0, 0, 0.0003},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			a := mustNew(t, Config{Margin: tc.margin})
			var samples []time.Duration
			for range 12288 { // one refresh point; all still in the window
				d := lognormal.Draw(r, 20*time.Millisecond, 0.5)
				samples = append(samples, d)
				a.Observe(d, true)
			}
			slices.Sort(samples)
			exact := quantile.Exact(samples, 0.999)
			q, n := a.Quantile()
			if math.Abs(float64(q-exact)) > 0.02*float64(exact) {
				t.Errorf("p99.9 estimate %v from %d latencies, exact %v", q, n, exact)
			}
			timeout := a.AttemptTimeout()
			over := 0
			const fresh = 200000
			for range fresh {
				if lognormal.Draw(r, 20*time.Millisecond, 0.5) > timeout {
					over++
				}
			}
			share := float64(over) / fresh
			t.Logf("timeout %v (p99.9 %v): %.3f%% of fresh attempts exceed it", timeout.Round(time.Microsecond), q.Round(time.Microsecond), 100*share)
			if share < tc.min || share > tc.max {
				t.Errorf("%.4f%% of fresh attempts time out, want in [%.2f%%, %.2f%%]", 100*share, 100*tc.min, 100*tc.max)
			}
		})
	}
}

// TestFollowsSlowdown doubles latency. Attempts over the timeout fail and
// are not observed, yet the survivors just under it lift the estimate, so
// the timeout climbs by up to the margin per refresh until it covers the
// new p99.9 again.
func TestFollowsSlowdown(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := mustNew(t, Config{})
	attempt := func(median time.Duration) bool {
		d := lognormal.Draw(r, median, 0.5)
		ok := d <= a.AttemptTimeout()
		a.Observe(min(d, a.AttemptTimeout()), ok)
		return ok
	}
	for range 20000 {
		attempt(20 * time.Millisecond)
	}
	before := a.AttemptTimeout()
	for range 60000 {
		attempt(40 * time.Millisecond)
	}
	after := a.AttemptTimeout()
	failed := 0
	for range 20000 {
		if !attempt(40 * time.Millisecond) {
			failed++
		}
	}
	t.Logf("timeout %v before, %v after latency doubled; %.3f%% of attempts then time out", before.Round(time.Millisecond), after.Round(time.Millisecond), 100*float64(failed)/20000)
	// p99.9 of lognormal(40ms, 0.5) is 40ms * e^(0.5*3.09) = 187ms.
	if after < 187*time.Millisecond {
		t.Errorf("timeout %v after the slowdown, want above the new p99.9 of 187ms", after)
	}
	if failed > 20 {
		t.Errorf("%d of 20000 attempts timed out after adapting, want at most 0.1%%", failed)
	}
}

func TestConcurrentObserve(t *testing.T) {
	a := mustNew(t, Config{})
	swarm.Go(t, 4, func(g int) {
		for i := range 3000 {
			a.Observe(time.Duration(g*3000+i)*time.Microsecond, true)
			a.AttemptTimeout()
		}
	})
	if got := a.AttemptTimeout(); got < DefaultFloor || got > DefaultCeiling {
		t.Errorf("AttemptTimeout() = %v out of bounds", got)
	}
}

// TestWidening walks Observe's rules for timeouts.
func TestWidening(t *testing.T) {
	// trained returns an Adaptive that learnt 20 ms answers, and its
	// timeout, about 30 ms.
	trained := func() (*Adaptive, time.Duration) {
		a := mustNew(t, Config{})
		for range 5000 {
			a.Observe(20*time.Millisecond, true)
		}
		return a, a.AttemptTimeout()
	}
	timeouts := func(a *Adaptive, n int, latency time.Duration) {
		for range n {
			a.Observe(latency, false)
		}
	}
	t.Run("fewer than WidenAfter in a row: unchanged", func(t *testing.T) {
		a, base := trained()
		timeouts(a, 2, base)
		a.Observe(20*time.Millisecond, true)
		timeouts(a, 2, base)
		if got := a.AttemptTimeout(); got != base {
			t.Errorf("timeout %v, want %v: a success broke each streak", got, base)
		}
	})
	t.Run("fast failures are not timeouts", func(t *testing.T) {
		a, base := trained()
		timeouts(a, 100, time.Millisecond)
		if got := a.AttemptTimeout(); got != base {
			t.Errorf("timeout %v, want %v", got, base)
		}
	})
	t.Run("attempts started under the old timeout do not count twice", func(t *testing.T) {
		a, base := trained()
		timeouts(a, 3, base) // doubled
		timeouts(a, 50, base)
		if got := a.AttemptTimeout(); got != 2*base {
			t.Errorf("timeout %v, want %v", got, 2*base)
		}
	})
	t.Run("never past the ceiling", func(t *testing.T) {
		a, _ := trained()
		for range 100 {
			timeouts(a, 3, a.AttemptTimeout())
		}
		if got := a.AttemptTimeout(); got != DefaultCeiling {
			t.Errorf("timeout %v, want the ceiling, %v", got, DefaultCeiling)
		}
	})
}

// FuzzAttemptTimeout checks that no configuration and latency, however
// large, gives a timeout outside [Floor, Ceiling].
func FuzzAttemptTimeout(f *testing.F) {
	f.Add(int64(20*time.Millisecond), 1.5, int64(0), int64(0))
	f.Add(int64(math.MaxInt64), 1e6, int64(time.Millisecond), int64(math.MaxInt64))
	f.Add(int64(-1), 1.0, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, latency int64, margin float64, floor, ceiling int64) {
		a, err := New(Config{Margin: margin, Floor: time.Duration(floor), Ceiling: time.Duration(ceiling), FalseTimeoutRate: 0.5})
		if err != nil {
			return
		}
		for range 8 {
			a.Observe(time.Duration(latency), true)
		}
		got := a.AttemptTimeout()
		if got < a.floor || got > a.ceiling {
			t.Fatalf("AttemptTimeout() = %v outside [%v, %v]", got, a.floor, a.ceiling)
		}
	})
}
