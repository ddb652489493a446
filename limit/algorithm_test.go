package limit

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAIMDUpdate(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		cfg  AIMDConfig
		s    Sample
		want int
	}{
		// Limit 10, 5 in flight: half the limit is in use, so +1.
		{"served at half load grows", AIMDConfig{InitialLimit: 10}, Sample{RTT: 10 * ms, InFlight: 5}, 11},
		// Limit 10, 4 in flight: the server is idle, nothing learnt.
		{"served when idle holds", AIMDConfig{InitialLimit: 10}, Sample{RTT: 10 * ms, InFlight: 4}, 10},
		// A drop: 10 * 0.9 = 9.
		{"drop backs off", AIMDConfig{InitialLimit: 10}, Sample{RTT: 10 * ms, InFlight: 10, Dropped: true}, 9},
		// Slower than the 100 ms timeout: a drop, 10 * 0.5 = 5.
		{"timeout backs off", AIMDConfig{InitialLimit: 10, Timeout: 100 * ms, BackoffRatio: 0.5}, Sample{RTT: 101 * ms, InFlight: 10}, 5},
		// 2 * 0.9 = 1.8 truncates to 1, which MinLimit 1 allows.
		{"floor at MinLimit", AIMDConfig{InitialLimit: 2}, Sample{Dropped: true}, 1},
		// Limit 3 with MinLimit 3: a drop cannot take it lower.
		{"custom MinLimit", AIMDConfig{InitialLimit: 3, MinLimit: 3}, Sample{Dropped: true}, 3},
		// At MaxLimit 10 the increase is clamped.
		{"ceiling at MaxLimit", AIMDConfig{InitialLimit: 10, MaxLimit: 10}, Sample{InFlight: 10}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewAIMD(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Update(tt.s); got != tt.want {
				t.Errorf("Update = %d, want %d", got, tt.want)
			}
			if got := a.Limit(); got != tt.want {
				t.Errorf("Limit = %d, want %d", got, tt.want)
			}
		})
	}
}

// warm returns a Gradient2 whose long- and short-term RTTs are both rtt,
// after its warm-up samples at full load.
func warm(t *testing.T, cfg Gradient2Config, rtt time.Duration) *Gradient2 {
	t.Helper()
	g, err := NewGradient2(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.longRTT, g.shortRTT = float64(rtt), float64(rtt)
	g.samples = gradient2Warmup
	return g
}

func TestGradient2Update(t *testing.T) {
	ms := time.Millisecond
	// One-sample windows, no smoothing, tolerance 1.5, queue 4: each row
	// states the long-term and short-term RTT the sample leaves.
	sharp := Gradient2Config{InitialLimit: 20, Smoothing: 1, Tolerance: 1.5, QueueSize: 4, LongWindow: 1, ShortWindow: 1}
	tests := []struct {
		name string
		cfg  Gradient2Config
		s    Sample
		want int
	}{
		// long = short = 10 ms: gradient 1, limit 20*1 + 4 = 24.
		{"steady latency grows by the queue", sharp, Sample{RTT: 10 * ms, InFlight: 20}, 24},
		// LongWindow 1: long = short = 100 ms, the sample itself, so any
		// latency keeps the gradient at 1: 20 + 4 = 24.
		{"one-sample long window never shrinks", sharp, Sample{RTT: 100 * ms, InFlight: 20}, 24},
		// 9 of 20 in flight, below half the limit: no change.
		{"app-limited holds", sharp, Sample{RTT: 10 * ms, InFlight: 9}, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := warm(t, tt.cfg, 10*ms)
			if got := g.Update(tt.s); got != tt.want {
				t.Errorf("Update = %d, want %d", got, tt.want)
			}
		})
	}

	// A long window of 3 (factor 0.5) and a short window of 1: the long
	// RTT moves halfway to each sample.
	slow := Gradient2Config{InitialLimit: 20, Smoothing: 1, Tolerance: 1.5, QueueSize: 4, LongWindow: 3, ShortWindow: 1}
	steps := []struct {
		name string
		s    Sample
		want int
	}{
		// long 10 -> 20 ms, short 30 ms: gradient 1.5*20/30 = 1, 20 + 4 = 24.
		{"within tolerance grows", Sample{RTT: 30 * ms, InFlight: 24}, 24},
		// long 20 -> 60 ms, short 100: gradient 0.9, 24*0.9 + 4 = 25.6.
		{"near tolerance", Sample{RTT: 100 * ms, InFlight: 24}, 25},
		// long 60 -> 255 ms, short 450: 1.5*255/450 = 0.85, 25.6*0.85+4 = 25.76.
		{"over tolerance shrinks the gradient", Sample{RTT: 450 * ms, InFlight: 25}, 25},
		// long 255 -> 128 ms, then long/short = 128/1 > 2, so *0.95 = 121;
		// gradient clamps to 1: 25.76 + 4 = 29.76.
		{"fast sample: long decays", Sample{RTT: 1 * ms, InFlight: 25}, 29},
	}
	g := warm(t, slow, 10*ms)
	for _, st := range steps {
		if got := g.Update(st.s); got != st.want {
			t.Fatalf("%s: Update = %d, want %d (long %v)", st.name, got, st.want, time.Duration(g.longRTT))
		}
	}

	// The gradient is clamped at 0.5: a sample 100 times the long RTT
	// halves the limit (plus the queue), no more.
	g = warm(t, Gradient2Config{InitialLimit: 40, Smoothing: 1, QueueSize: -1, LongWindow: 30000, ShortWindow: 1}, 10*ms)
	if got := g.Update(Sample{RTT: time.Second, InFlight: 40}); got != 20 {
		t.Errorf("a sample 100x the long RTT: limit %d, want 20 (40 * 0.5)", got)
	}
	// And MinLimit holds it.
	g = warm(t, Gradient2Config{InitialLimit: 4, MinLimit: 3, Smoothing: 1, QueueSize: -1, LongWindow: 30000, ShortWindow: 1}, 10*ms)
	if got := g.Update(Sample{RTT: time.Second, InFlight: 4}); got != 3 {
		t.Errorf("below MinLimit: limit %d, want 3", got)
	}
}

func TestFixed(t *testing.T) {
	f := Fixed(5)
	if got := f.Update(Sample{Dropped: true}); got != 5 || f.Limit() != 5 {
		t.Errorf("Fixed(5): Update %d, Limit %d", got, f.Limit())
	}
}

func TestInvalidConfig(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"Fixed 0", func() error { _, err := New(Config{Algorithm: Fixed(0)}); return err }()},
		{"AIMD negative MinLimit", func() error { _, err := NewAIMD(AIMDConfig{MinLimit: -1}); return err }()},
		{"AIMD Max below Min", func() error { _, err := NewAIMD(AIMDConfig{MinLimit: 10, MaxLimit: 5}); return err }()},
		{"AIMD BackoffRatio 1", func() error { _, err := NewAIMD(AIMDConfig{BackoffRatio: 1}); return err }()},
		{"AIMD negative Timeout", func() error { _, err := NewAIMD(AIMDConfig{Timeout: -1}); return err }()},
		{"Gradient2 Smoothing 2", func() error { _, err := NewGradient2(Gradient2Config{Smoothing: 2}); return err }()},
		{"Gradient2 Tolerance 0.5", func() error { _, err := NewGradient2(Gradient2Config{Tolerance: 0.5}); return err }()},
		{"Gradient2 negative LongWindow", func() error { _, err := NewGradient2(Gradient2Config{LongWindow: -1}); return err }()},
		{"Gradient2 negative ShortWindow", func() error { _, err := NewGradient2(Gradient2Config{ShortWindow: -1}); return err }()},
		{"Gradient2 Max below Min", func() error { _, err := NewGradient2(Gradient2Config{MinLimit: 10, MaxLimit: 5}); return err }()},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, ErrInvalidConfig) {
			t.Errorf("%s: error %v, want ErrInvalidConfig", tt.name, tt.err)
		}
	}
}

// Gradient2's long-term baseline is not dragged down by noise: fed
// exponential latencies (a coefficient of variation of 1) with the limit
// in use, it stays near their mean, where a cut on every 10-sample dip
// below half of it held it near 0.6 of the mean. A real fall, from 10 ms
// to 1 ms, still cuts it within a thousand samples to about twice the new
// latency, where the cut stops.
func TestGradient2BaselineUnderNoise(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		g, err := NewGradient2(Gradient2Config{})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 1))
		now := epoch
		for range 200_000 {
			now = now.Add(time.Millisecond)
			g.Update(Sample{RTT: time.Duration(r.ExpFloat64() * float64(time.Millisecond)), InFlight: g.Limit(), Now: now})
		}
		if got := time.Duration(g.longRTT); got < 900*time.Microsecond || got > 1100*time.Microsecond {
			t.Errorf("seed %d: the long-term baseline is %v after exponential latencies of mean 1ms, want within 10%% of it", seed, got)
		}
		for range 50_000 {
			now = now.Add(time.Millisecond)
			g.Update(Sample{RTT: 10 * time.Millisecond, InFlight: g.Limit(), Now: now})
		}
		n := 0
		for ; time.Duration(g.longRTT) > 2500*time.Microsecond && n < 1000; n++ {
			now = now.Add(time.Millisecond)
			g.Update(Sample{RTT: time.Millisecond, InFlight: g.Limit(), Now: now})
		}
		if n >= 1000 {
			t.Errorf("seed %d: the baseline is still %v after 1000 samples of 1ms that followed 10ms ones, want below 2.5ms", seed, time.Duration(g.longRTT))
		}
	}
}
