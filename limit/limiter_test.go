package limit

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/swarm"
)

func TestAcquireRefusesAtLimit(t *testing.T) {
	l, err := New(Config{Algorithm: Fixed(2)})
	if err != nil {
		t.Fatal(err)
	}
	a, ok1 := l.Acquire(epoch)
	b, ok2 := l.Acquire(epoch)
	if _, ok := l.Acquire(epoch); !ok1 || !ok2 || ok {
		t.Fatalf("Acquire x3 at limit 2: %v %v %v, want true true false", ok1, ok2, ok)
	}
	if l.InFlight() != 2 || l.Limit() != 2 {
		t.Fatalf("InFlight %d, Limit %d; want 2, 2", l.InFlight(), l.Limit())
	}
	a.Served(epoch.Add(time.Millisecond))
	b.Ignore()
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d after both released, want 0", l.InFlight())
	}
	var zero Token
	zero.Served(epoch) // a refused Acquire's token: a no-op
	zero.Dropped(epoch)
	zero.Ignore()
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d after releasing zero tokens, want 0", l.InFlight())
	}
}

// The default is a Gradient at its InitialLimit, measuring its minRTT.
func TestDefault(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := l.alg.(*Gradient)
	if !ok || !g.measuring || l.Limit() != DefaultGradientInitialLimit {
		t.Errorf("New(Config{}): algorithm %T, limit %d; want a *Gradient measuring, at %d", l.alg, l.Limit(), DefaultGradientInitialLimit)
	}
}

// The limiter passes the sample it was given to the algorithm: RTT from
// the acquire time, the in-flight count at acquire, the drop; Ignore
// passes none.
func TestSampleReachesAlgorithm(t *testing.T) {
	rec := &recorder{limit: 4}
	l, err := New(Config{Algorithm: rec})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := l.Acquire(epoch)
	b, _ := l.Acquire(epoch.Add(time.Second))
	c, _ := l.Acquire(epoch)
	b.Dropped(epoch.Add(3 * time.Second))
	a.Served(epoch.Add(5 * time.Second))
	c.Ignore()
	want := []Sample{
		{RTT: 2 * time.Second, InFlight: 2, Dropped: true, Now: epoch.Add(3 * time.Second)},
		{RTT: 5 * time.Second, InFlight: 1, Now: epoch.Add(5 * time.Second)},
	}
	if len(rec.samples) != len(want) {
		t.Fatalf("samples %+v, want %+v", rec.samples, want)
	}
	for i := range want {
		if rec.samples[i] != want[i] {
			t.Errorf("sample %d: %+v, want %+v", i, rec.samples[i], want[i])
		}
	}
}

// recorder is an Algorithm that records its samples and keeps its limit.
type recorder struct {
	limit   int
	samples []Sample
}

func (r *recorder) Limit() int { return r.limit }
func (r *recorder) Update(s Sample) int {
	r.samples = append(r.samples, s)
	return r.limit
}

// Many goroutines acquiring and releasing: in flight never exceeds the
// limit, and returns to 0.
func TestConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name string
		alg  func() Algorithm
	}{
		{"Fixed", func() Algorithm { return Fixed(5) }},
		{"AIMD", func() Algorithm { a, _ := NewAIMD(AIMDConfig{InitialLimit: 5, MaxLimit: 8}); return a }},
		{"Gradient2", func() Algorithm { g, _ := NewGradient2(Gradient2Config{InitialLimit: 5, MaxLimit: 8}); return g }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := New(Config{Algorithm: tc.alg()})
			if err != nil {
				t.Fatal(err)
			}
			maxLimit := l.Limit()
			if tc.name != "Fixed" {
				maxLimit = 8
			}
			var held, peak atomic.Int64
			swarm.Go(t, 32, func(g int) {
				for i := range 500 {
					now := epoch.Add(time.Duration(i) * time.Millisecond)
					tok, ok := l.Acquire(now)
					if !ok {
						continue
					}
					n := held.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					if n > int64(maxLimit) {
						t.Errorf("%d held, above the limit's ceiling %d", n, maxLimit)
					}
					held.Add(-1)
					switch (g + i) % 3 {
					case 0:
						tok.Served(now.Add(time.Millisecond))
					case 1:
						tok.Dropped(now.Add(time.Millisecond))
					default:
						tok.Ignore()
					}
				}
			})
			if l.InFlight() != 0 {
				t.Errorf("InFlight %d after all released, want 0", l.InFlight())
			}
			t.Logf("peak %d held at once, final limit %d", peak.Load(), l.Limit())
		})
	}
}
