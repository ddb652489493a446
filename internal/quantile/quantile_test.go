package quantile

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/lognormal"
	"github.com/unherd/unherd/internal/swarm"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// distributions are the seeded latency models of the property tests.
var distributions = []struct {
	name string
	draw func(r *rand.Rand) time.Duration
}{
	{"lognormal median 10ms sigma 1", func(r *rand.Rand) time.Duration {
		return lognormal.Draw(r, 10*time.Millisecond, 1)
	}},
	{"bimodal 99% 10ms 1% 1s", func(r *rand.Rand) time.Duration {
		if r.IntN(100) == 0 {
			return time.Duration(float64(time.Second) * (1 + 0.1*r.NormFloat64()))
		}
		return lognormal.Draw(r, 10*time.Millisecond, 0.2)
	}},
	{"uniform 1ms to 100ms", func(r *rand.Rand) time.Duration {
		return time.Millisecond + time.Duration(r.Int64N(int64(99*time.Millisecond)))
	}},
	{"uniform 0 to 300ns (exact buckets)", func(r *rand.Rand) time.Duration {
		return time.Duration(r.Int64N(300))
	}},
	{"lognormal median 50us sigma 2", func(r *rand.Rand) time.Duration {
		return lognormal.Draw(r, 50*time.Microsecond, 2)
	}},
}

var testQuantiles = []float64{0.5, 0.9, 0.95, 0.99, 0.999}

func mustNew(t testing.TB, cfg Config) *Estimator { return configtest.Must(New(cfg))(t) }

func relErr(got, want time.Duration) float64 {
	if want == 0 {
		return math.Abs(float64(got))
	}
	return math.Abs(float64(got-want)) / float64(want)
}

// TestQuantileAccuracy compares estimates with exact sample quantiles, p50
// to p99.9, for several distributions and seeds: the bound is 2% and the
// layout guarantees 0.78%.
func TestQuantileAccuracy(t *testing.T) {
	const n = 20000
	for _, dist := range distributions {
		for seed := uint64(1); seed <= 5; seed++ {
			r := rand.New(rand.NewPCG(seed, 42))
			e := mustNew(t, Config{Window: n, Quantiles: testQuantiles})
			samples := make([]time.Duration, n)
			for i := range samples {
				samples[i] = dist.draw(r)
				e.Record(samples[i])
			}
			slices.Sort(samples)
			e.Refresh()
			worst := 0.0
			for i, q := range testQuantiles {
				want := Exact(samples, q)
				got, count := e.Quantile(q)
				if count != n {
					t.Fatalf("%s seed %d: count %d, want %d", dist.name, seed, count, n)
				}
				tracked, _ := e.Tracked(i)
				if tracked != got {
					t.Errorf("%s seed %d q %v: Tracked %v, Quantile %v", dist.name, seed, q, tracked, got)
				}
				err := relErr(got, want)
				worst = max(worst, err)
				if err > 0.02 {
					t.Errorf("%s seed %d q %v: got %v, exact %v: relative error %.4f > 2%%", dist.name, seed, q, got, want, err)
				}
				if err > 1.0/128+1e-9 {
					t.Errorf("%s seed %d q %v: relative error %.4f above the layout's 0.78%% bound", dist.name, seed, q, err)
				}
			}
			if seed == 1 {
				t.Logf("%s: worst relative error %.4f%%", dist.name, 100*worst)
			}
		}
	}
}

// TestBucketBound checks the layout: every value's bucket midpoint is
// within 1/128 of it, buckets are monotone, and huge values clamp.
func TestBucketBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 200000; i++ {
		d := time.Duration(r.Int64N(1 << uint(r.IntN(maxBits))))
		if err := relErr(value(bucket(d)), d); err > 1.0/128 {
			t.Fatalf("value(bucket(%d)) = %d: relative error %v", d, value(bucket(d)), err)
		}
	}
	prev := 0
	for d := time.Duration(0); d < 1<<20; d++ {
		b := bucket(d)
		if b < prev || b > prev+1 {
			t.Fatalf("bucket(%d) = %d after %d", d, b, prev)
		}
		prev = b
	}
	tests := []struct {
		name string
		d    time.Duration
		want int
	}{
		{"negative counts as zero", -5, 0},
		{"zero", 0, 0},
		{"last exact", exactTop - 1, exactTop - 1},
		{"first shared", exactTop, exactTop},
		{"largest distinct", 1<<maxBits - 1, nBuckets - 1},
		{"clamped", 1 << maxBits, nBuckets - 1},
		{"max duration", math.MaxInt64, nBuckets - 1},
	}
	for _, tc := range tests {
		if got := bucket(tc.d); got != tc.want {
			t.Errorf("%s: bucket(%d) = %d, want %d", tc.name, tc.d, got, tc.want)
		}
	}
}

func FuzzBucket(f *testing.F) {
	for _, d := range []int64{-1, 0, 1, 127, 128, 129, 1e6, 1 << 42, 1 << 43, math.MaxInt64, math.MinInt64} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d int64) {
		b := bucket(time.Duration(d))
		if b < 0 || b >= nBuckets {
			t.Fatalf("bucket(%d) = %d out of range", d, b)
		}
		if d > 0 && d < 1<<maxBits {
			if err := relErr(value(b), time.Duration(d)); err > 1.0/128 {
				t.Fatalf("value(bucket(%d)) = %d: relative error %v", d, value(b), err)
			}
		}
	})
}

// TestWindowFollowsChange records a shift from 10 ms to 100 ms; after two
// half-windows of the new latency the old one is gone.
func TestWindowFollowsChange(t *testing.T) {
	e := mustNew(t, Config{Window: 1000, Quantiles: []float64{0.5}}) // rounds to 1024
	if e.Window() != 1024 {
		t.Fatalf("Window() = %d, want 1024", e.Window())
	}
	for i := 0; i < 5000; i++ {
		e.Record(10 * time.Millisecond)
	}
	if got, _ := e.Tracked(0); relErr(got, 10*time.Millisecond) > 0.01 {
		t.Fatalf("p50 before the change = %v, want about 10ms", got)
	}
	for i := 0; i < 3*1024; i++ {
		e.Record(100 * time.Millisecond)
	}
	got, n := e.Quantile(0.01)
	if relErr(got, 100*time.Millisecond) > 0.01 {
		t.Errorf("p1 after the change = %v, want about 100ms", got)
	}
	if n < 1024 || n > 2048 {
		t.Errorf("window holds %d samples, want between 1024 and 2048", n)
	}
}

// TestTrackedWarmUp checks when tracked values appear: at every power of
// two until Window/4, then every Window/4 samples.
func TestTrackedWarmUp(t *testing.T) {
	e := mustNew(t, Config{Window: 4096, Quantiles: []float64{0.5}})
	tests := []struct {
		name    string
		records int // total recorded so far
		wantN   int // samples at the last refresh
	}{
		{"nothing yet", 0, 0},
		{"first sample", 1, 1},
		{"three samples: refreshed at two", 3, 2},
		{"five hundred: refreshed at 256", 500, 256},
		{"a thousand: refreshed at 512", 1000, 512},
		{"1024 = Window/4", 1024, 1024},
		{"2047", 2047, 1024},
		{"2048", 2048, 2048},
		{"5000: after a rotation at 4096, refreshed at 4096", 5000, 4096},
	}
	done := 0
	for _, tc := range tests {
		for ; done < tc.records; done++ {
			e.Record(time.Millisecond)
		}
		if _, n := e.Tracked(0); n != tc.wantN {
			t.Errorf("%s: Tracked count %d, want %d", tc.name, n, tc.wantN)
		}
	}
}

func TestNewValidates(t *testing.T) {
	row := configtest.Row[Config]
	configtest.Check(t, ErrInvalidConfig, configtest.New(New), []configtest.Case[Config]{
		row("zero", Config{}, true),
		row("negative window", Config{Window: -1}, false),
		row("huge window", Config{Window: maxWindow + 1}, false),
		row("quantile 1", Config{Quantiles: []float64{1}}, false),
		row("quantile 0", Config{Quantiles: []float64{0}}, false),
		row("NaN", Config{Quantiles: []float64{math.NaN()}}, false),
		row("p99.9", Config{Quantiles: []float64{0.999}}, true),
	})
}

// TestConcurrentRecord records from several goroutines (run it with
// -race) and checks that no sample is lost without a rotation.
func TestConcurrentRecord(t *testing.T) {
	e := mustNew(t, Config{Window: 1 << 16, Quantiles: []float64{0.5, 0.99}})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				e.Record(time.Duration(i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if _, n := e.Quantile(0.5); n != 20000 {
		t.Errorf("count %d, want 20000", n)
	}
}

// TestMarksCoverCounts records samples whose range moves across several
// rotations and checks, after every sample, that each bucket with a count
// is marked, and at every power of two and refresh point that the marked
// scan returns what a scan of every bucket returns: the marks only spare
// work.
func TestMarksCoverCounts(t *testing.T) {
	e := mustNew(t, Config{Window: 256, Quantiles: []float64{0.95}})
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 5 * 512 {
		// The median moves from 1 us to 10 s, so old buckets empty out
		// and new ones fill, in both halves.
		med := float64(time.Microsecond) * math.Pow(10, float64(i)/512)
		e.Record(time.Duration(med * math.Exp(r.NormFloat64())))
		for h := range e.hists {
			for b := range e.hists[h] {
				if e.hists[h][b].Load() != 0 && e.marks[h][b/64].Load()&(1<<(b%64)) == 0 {
					t.Fatalf("after %d samples: bucket %d of half %d holds %d, unmarked", i+1, b, h, e.hists[h][b].Load())
				}
			}
		}
		if n := i + 1; n&(n-1) == 0 || n%64 == 0 {
			total := e.count()
			for _, q := range testQuantiles {
				if got, want := e.at(q, total), scanAll(e, q, total); got != want {
					t.Fatalf("after %d samples: q%v = %v, a scan of every bucket gives %v", n, q, got, want)
				}
			}
		}
	}
}

// scanAll is Estimator.at without the marks: every bucket in order.
func scanAll(e *Estimator, q float64, total uint64) time.Duration {
	if total == 0 {
		return 0
	}
	rank := rankOf(q, total)
	var seen uint64
	last := 0
	for i := range nBuckets {
		c := uint64(e.hists[0][i].Load()) + uint64(e.hists[1][i].Load())
		if c == 0 {
			continue
		}
		seen += c
		last = i
		if seen >= rank {
			break
		}
	}
	return value(last)
}

// TestConcurrentRotation records from several goroutines through many
// rotations (run it with -race) and checks, once they are done, that every
// bucket with a count is marked.
func TestConcurrentRotation(t *testing.T) {
	e := mustNew(t, Config{Window: 64, Quantiles: []float64{0.5}})
	swarm.Seeded(t, 4, 1, func(r *rand.Rand) {
		for range 20000 {
			e.Record(time.Duration(r.Int64N(int64(time.Second))))
		}
	})
	for h := range e.hists {
		for b := range e.hists[h] {
			if e.hists[h][b].Load() != 0 && e.marks[h][b/64].Load()&(1<<(b%64)) == 0 {
				t.Errorf("bucket %d of half %d holds %d, unmarked", b, h, e.hists[h][b].Load())
			}
		}
	}
}
