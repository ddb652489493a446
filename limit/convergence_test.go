package limit

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
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
}

// limitTrace is the limit seen at every tenth of a second.
type limitTrace []int

// simulate runs a server with a FIFO queue and the given workers per
// phase, fed by Poisson arrivals at rate per second, through l: a request
// the limiter refuses is dropped at once; an admitted one queues for a
// worker, and its latency sample is its queue wait plus its service time.
// It returns the limit every 100 ms.
func simulate(l *Limiter, seed uint64, rate float64, phases []phase) limitTrace {
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
	)
	for _, p := range phases {
		end += p.duration
		for {
			next := nextArr
			if len(ends) > 0 && ends[0] < next {
				next = ends[0]
			}
			for nextSample <= next && nextSample < end {
				trace = append(trace, l.Limit())
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
				nextArr = now + rng.ExpFloat64()/rate
				if tok, ok := l.Acquire(at(now)); ok {
					service := math.Exp(serviceMu + serviceSigma*rng.NormFloat64())
					queue = append(queue, job{tok, service})
				}
			}
			for len(busy) < p.workers && len(queue) > 0 {
				j := queue[0]
				queue = queue[1:]
				busy = append(busy, running{now + j.service, j.tok})
				heap.Push(&ends, now+j.service)
			}
		}
	}
	return trace
}

// window returns the lowest and highest limit between from and to
// seconds.
func (tr limitTrace) window(from, to float64) (lo, hi int) {
	lo, hi = math.MaxInt, 0
	for _, n := range tr[int(from*10):int(to*10)] {
		lo, hi = min(lo, n), max(hi, n)
	}
	return lo, hi
}

// mean returns the mean limit between from and to seconds.
func (tr limitTrace) mean(from, to float64) float64 {
	sum := 0
	w := tr[int(from*10):int(to*10)]
	for _, n := range w {
		sum += n
	}
	return float64(sum) / float64(len(w))
}

// inBand returns the share of the time between from and to seconds that
// the limit spent within [lo, hi].
func (tr limitTrace) inBand(from, to float64, lo, hi int) float64 {
	in := 0
	w := tr[int(from*10):int(to*10)]
	for _, n := range w {
		if n >= lo && n <= hi {
			in++
		}
	}
	return float64(in) / float64(len(w))
}

// TestConvergence is the goal for the default algorithm: on a
// server with 8 workers (service time p90 50 ms, p99 150 ms) at twice its
// capacity, the limit settles between 6 and 12 within 30 s; when the
// capacity halves (4 workers) it follows, and when it doubles back it
// returns.
func TestConvergence(t *testing.T) {
	capacity := 8 / serviceMean // requests per second
	phases := []phase{{8, 60}, {4, 60}, {8, 60}}
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			l, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			tr := simulate(l, seed, 2*capacity, phases)
			m1, m2, m3 := tr.mean(30, 60), tr.mean(90, 120), tr.mean(150, 180)
			lo1, hi1 := tr.window(30, 60)
			lo2, hi2 := tr.window(90, 120)
			lo3, hi3 := tr.window(150, 180)
			b1, b2, b3 := tr.inBand(30, 60, 6, 12), tr.inBand(90, 120, 3, 6), tr.inBand(150, 180, 6, 12)
			first := -1.0
			for k, n := range tr {
				if n >= 6 && n <= 12 {
					first = float64(k) / 10
					break
				}
			}
			t.Logf("8 workers: first in [6, 12] at %.1f s, then over [30 s, 60 s) mean %.1f, %d..%d, %.0f%% in [6, 12]; 4 workers [90 s, 120 s): mean %.1f, %d..%d, %.0f%% in [3, 6]; 8 again [150 s, 180 s): mean %.1f, %d..%d, %.0f%% in [6, 12]",
				first, m1, lo1, hi1, 100*b1, m2, lo2, hi2, 100*b2, m3, lo3, hi3, 100*b3)
			if first < 0 || first > 30 {
				t.Errorf("8 workers: the limit first reached [6, 12] at %.1f s, want within 30 s", first)
			}
			for _, w := range []struct {
				name       string
				mean, band float64
			}{{"8 workers", m1, b1}, {"8 workers again", m3, b3}} {
				if w.mean < 6 || w.mean > 12 || w.band < 0.75 {
					t.Errorf("%s: mean limit %.1f, %.0f%% of the time in [6, 12]; want a mean in [6, 12] and at least 75%%", w.name, w.mean, 100*w.band)
				}
			}
			// With 4 workers the limit's equilibrium without noise is
			// Tolerance*4 + QueueSize (6.3): it must come down to it and
			// keep the workers busy.
			if m2 < 4 || m2 > 7.5 || hi2 > 10 {
				t.Errorf("4 workers: mean limit %.1f, highest %d; want a mean in [4, 7.5] and at most 10", m2, hi2)
			}
		})
	}
}
