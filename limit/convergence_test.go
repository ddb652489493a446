package limit

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/configtest"
)

// The service time of the convergence model: lognormal with p90 50 ms
// and p99 150 ms (sigma = ln 3 / (z99 - z90), mu from the p90).
var (
	serviceSigma = math.Log(3) / (2.3263478740408408 - 1.2815515655446004)
	serviceMu    = math.Log(0.050) - 1.2815515655446004*serviceSigma
	serviceMean  = math.Exp(serviceMu + serviceSigma*serviceSigma/2) // seconds
)

// phase is a stretch of the model's run with a number of workers.
type phase struct {
	workers  int
	duration float64 // seconds
	rate     float64 // arrivals per second; zero means simulate's rate
}

// completions is a min-heap of service end times.
type completions []float64

func (h completions) Len() int           { return len(h) }
func (h completions) Less(i, j int) bool { return h[i] < h[j] }
func (h completions) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *completions) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *completions) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// job is an admitted request: its token, and its service time.
type job struct {
	tok     Token
	service float64
	arrival float64
}

// limitTrace is the limit seen at every tenth of a second, or -1 while
// the algorithm was measuring its baseline (the limit pinned low on
// purpose): the statistics below skip those.
type limitTrace []int

// phaseStats is what the server did in one phase.
type phaseStats struct {
	wait     float64 // mean queueing delay of the requests that started service, seconds
	busy     float64 // share of the workers' time spent serving
	started  int     // requests that started service
	refused  int     // requests the limiter refused
	arrivals int
}

// simulate runs a server with a FIFO queue and the given workers per
// phase, fed by Poisson arrivals at rate per second, through l: a request
// the limiter refuses is dropped at once; an admitted one queues for a
// worker, and its latency sample is its queue wait plus its service time.
// It returns the limit every 100 ms, -1 when measuring is not nil and
// returns true, and the server's figures per phase.
func simulate(l *Limiter, seed uint64, rate float64, phases []phase, measuring func() bool) (limitTrace, []phaseStats) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	epoch := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }
	type running struct {
		end float64
		tok Token
	}
	var (
		now, end   float64
		queue      []job
		busy       []running // unordered; ends also in a heap for the next event
		ends       completions
		trace      limitTrace
		nextSample float64
		nextArr    = rng.ExpFloat64() / rate
		stats      = make([]phaseStats, len(phases))
	)
	cur := rate
	for i, p := range phases {
		st := &stats[i]
		if r := cmp.Or(p.rate, rate); r != cur {
			cur = r // arrivals are memoryless: redraw the next one at the new rate
			nextArr = end + rng.ExpFloat64()/cur
		}
		end += p.duration
		for {
			next := nextArr
			if len(ends) > 0 && ends[0] < next {
				next = ends[0]
			}
			for nextSample <= next && nextSample < end {
				if measuring != nil && measuring() {
					trace = append(trace, -1)
				} else {
					trace = append(trace, l.Limit())
				}
				nextSample += 0.1
			}
			if next >= end {
				break
			}
			now = next
			if len(ends) > 0 && ends[0] == now {
				heap.Pop(&ends)
				for i, r := range busy {
					if r.end == now {
						r.tok.Served(at(now))
						busy[i] = busy[len(busy)-1]
						busy = busy[:len(busy)-1]
						break
					}
				}
			} else {
				nextArr = now + rng.ExpFloat64()/cur
				st.arrivals++
				if tok, ok := l.Acquire(at(now)); ok {
					service := math.Exp(serviceMu + serviceSigma*rng.NormFloat64())
					queue = append(queue, job{tok, service, now})
				} else {
					st.refused++
				}
			}
			for len(busy) < p.workers && len(queue) > 0 {
				j := queue[0]
				queue = queue[1:]
				st.wait += now - j.arrival
				st.busy += j.service
				st.started++
				busy = append(busy, running{now + j.service, j.tok})
				heap.Push(&ends, now+j.service)
			}
		}
		if st.started > 0 {
			st.wait /= float64(st.started)
		}
		st.busy /= float64(p.workers) * p.duration
	}
	return trace, stats
}

// window returns the lowest and highest limit between from and to
// seconds.
func (tr limitTrace) window(from, to float64) (lo, hi int) {
	lo, hi = math.MaxInt, 0
	for _, n := range tr[int(from*10):int(to*10)] {
		if n >= 0 {
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	return lo, hi
}

// mean returns the mean limit between from and to seconds.
func (tr limitTrace) mean(from, to float64) float64 {
	sum, k := 0, 0
	for _, n := range tr[int(from*10):int(to*10)] {
		if n >= 0 {
			sum += n
			k++
		}
	}
	return float64(sum) / float64(k)
}

// inBand returns the share of the time between from and to seconds that
// the limit spent within [lo, hi].
func (tr limitTrace) inBand(from, to float64, lo, hi int) float64 {
	in, k := 0, 0
	for _, n := range tr[int(from*10):int(to*10)] {
		if n >= 0 {
			k++
			if n >= lo && n <= hi {
				in++
			}
		}
	}
	return float64(in) / float64(k)
}

// settled returns how long after from seconds the limit last left [lo,
// hi] before to: zero if it stayed in the band from the start.
func (tr limitTrace) settled(from, to float64, lo, hi int) float64 {
	last := from
	for k := int(from * 10); k < int(to*10); k++ {
		if n := tr[k]; n >= 0 && (n < lo || n > hi) {
			last = float64(k+1) / 10
		}
	}
	return last - from
}

// capacityPhases is the scenario: 8 workers, then 4, then 8
// again, a minute each.
var capacityPhases = []phase{{8, 60, 0}, {4, 60, 0}, {8, 60, 0}}

// TestConvergence is the goal for the default algorithm: on a
// server with 8 workers (service time p90 50 ms, p99 150 ms) at twice its
// capacity, the limit settles between 6 and 12 within 30 s; when the
// capacity halves (4 workers) it settles between 3 and 6 within 30 s,
// and when it doubles back, between 6 and 12 again within 30 s. The
// limit is checked every 100 ms outside the minRTT measurements, during
// which it is pinned to MinLimit on purpose.
func TestConvergence(t *testing.T) {
	capacity := 8 / serviceMean // requests per second
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			g := configtest.Must(NewGradient(GradientConfig{}))(t)
			l := mustNew(t, Config{Algorithm: g})
			tr, st := simulate(l, seed, 2*capacity, capacityPhases, g.Measuring)
			for i, w := range []struct {
				name   string
				lo, hi int
			}{{"8 workers", 6, 12}, {"4 workers", 3, 6}, {"8 workers again", 6, 12}} {
				from := 60 * float64(i)
				lo, hi := tr.window(from+30, from+60)
				t.Logf("%s: settled in [%d, %d] after %.1f s; over the last 30 s mean %.1f, %d..%d, %.0f%% in band; mean queueing delay %.1f ms, workers busy %.0f%%, %.0f%% of arrivals refused",
					w.name, w.lo, w.hi, tr.settled(from, from+60, w.lo, w.hi), tr.mean(from+30, from+60), lo, hi,
					100*tr.inBand(from+30, from+60, w.lo, w.hi), 1000*st[i].wait, 100*st[i].busy, 100*float64(st[i].refused)/float64(st[i].arrivals))
				if lo < w.lo || hi > w.hi {
					t.Errorf("%s: the limit ranged over %d..%d from 30 s to 60 s into the phase, want within [%d, %d]", w.name, lo, hi, w.lo, w.hi)
				}
			}
		})
	}
}

// TestConvergenceDefault checks that New(Config{}) is the algorithm
// TestConvergence runs: the same trace, limit for limit.
func TestConvergenceDefault(t *testing.T) {
	capacity := 8 / serviceMean
	g := configtest.Must(NewGradient(GradientConfig{}))(t)
	explicit := mustNew(t, Config{Algorithm: g})
	def := mustNew(t, Config{})
	want, _ := simulate(explicit, 1, 2*capacity, capacityPhases, nil)
	got, _ := simulate(def, 1, 2*capacity, capacityPhases, nil)
	if !slices.Equal(got, want) {
		t.Error("New(Config{}) moves its limit unlike NewGradient(GradientConfig{})")
	}
}

// TestConvergenceLightLoad: at a fifth of its capacity the server shows
// no queueing, and the limit must not fall (it grows, slowly, as far as
// the demand shows it can); after ten idle minutes, load at twice the
// capacity brings it into [6, 12] within 30 s.
func TestConvergenceLightLoad(t *testing.T) {
	capacity := 8 / serviceMean
	phases := []phase{{8, 120, capacity / 5}, {8, 600, 1e-9}, {8, 60, 2 * capacity}}
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			g := configtest.Must(NewGradient(GradientConfig{}))(t)
			l := mustNew(t, Config{Algorithm: g})
			tr, _ := simulate(l, seed, capacity/5, phases, g.Measuring)
			prev := 0
			for k, n := range tr[:1200] {
				if n >= 0 && n < prev {
					t.Fatalf("light load: the limit fell from %d to %d at %.1f s", prev, n, float64(k)/10)
				}
				prev = max(prev, n)
			}
			lo, hi := tr.window(750, 780)
			t.Logf("light load: the limit grew to %d in 120 s; at twice the capacity after 10 idle minutes: settled in [6, 12] after %.1f s, %d..%d over its last 30 s",
				prev, tr.settled(720, 780, 6, 12), lo, hi)
			if lo < 6 || hi > 12 {
				t.Errorf("after idling: the limit ranged over %d..%d from 30 s to 60 s into the load, want within [6, 12]", lo, hi)
			}
		})
	}
}

// TestConvergenceGradient2 runs Gradient2's defaults through the same
// scenario: its mean limit stays in [6, 12] with 8 workers, but with 4
// it stays near its noiseless equilibrium, Tolerance*4 + QueueSize
// (6.3), rather than following the capacity down to 4.
func TestConvergenceGradient2(t *testing.T) {
	capacity := 8 / serviceMean // requests per second
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			g := configtest.Must(NewGradient2(Gradient2Config{}))(t)
			l := mustNew(t, Config{Algorithm: g})
			tr, _ := simulate(l, seed, 2*capacity, capacityPhases, nil)
			m1, m2, m3 := tr.mean(30, 60), tr.mean(90, 120), tr.mean(150, 180)
			lo1, hi1 := tr.window(30, 60)
			lo2, hi2 := tr.window(90, 120)
			lo3, hi3 := tr.window(150, 180)
			b1, b2, b3 := tr.inBand(30, 60, 6, 12), tr.inBand(90, 120, 3, 6), tr.inBand(150, 180, 6, 12)
			t.Logf("8 workers [30 s, 60 s): mean %.1f, %d..%d, %.0f%% in [6, 12]; 4 workers [90 s, 120 s): mean %.1f, %d..%d, %.0f%% in [3, 6]; 8 again [150 s, 180 s): mean %.1f, %d..%d, %.0f%% in [6, 12]",
				m1, lo1, hi1, 100*b1, m2, lo2, hi2, 100*b2, m3, lo3, hi3, 100*b3)
			// Gradient2's baseline is an average of latencies under the
			// load it limits (see the package doc): it settles near the
			// capacity, follows a fall of it only part of the way (on some
			// seeds not at all), and
			// after the capacity comes back it overshoots, the queueing
			// of the slow phase having raised its baseline. What is
			// checked is what it does, not the goal, which
			// Gradient meets (TestConvergence).
			if m1 < 6 || m1 > 12 || b1 < 0.65 {
				t.Errorf("8 workers: mean limit %.1f, %.0f%% of the time in [6, 12]; want a mean in [6, 12] and at least 65%%", m1, 100*b1)
			}
			if m2 > 10 || hi2 > 12 {
				t.Errorf("4 workers: mean limit %.1f, highest %d; want a mean of at most 10 and at most 12", m2, hi2)
			}
			if m3 < 6 || m3 > 2.5*8 {
				t.Errorf("8 workers again: mean limit %.1f; want it in [6, 20], within 2.5 times the workers", m3)
			}
		})
	}
}
