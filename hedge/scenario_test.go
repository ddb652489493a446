package hedge

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/internal/tally"
)

// A latency model gives the latency of attempt a of request k, from a
// generator seeded by (seed, k, a), so a run does not depend on goroutine
// scheduling.
type model func(r *rand.Rand) time.Duration

// tailModel is Dean and Barroso's situation: interference makes 1% of
// calls take about 1 s; the rest take about 10 ms.
func tailModel(r *rand.Rand) time.Duration {
	if r.IntN(100) == 0 {
		return time.Duration(float64(time.Second) * (1 + 0.05*r.NormFloat64()))
	}
	return time.Duration(float64(10*time.Millisecond) * math.Exp(0.2*r.NormFloat64()))
}

// uniformSlowModel is a uniformly saturated fleet: every call takes about
// 100 ms on every replica, so a second replica is as slow as the first.
func uniformSlowModel(r *rand.Rand) time.Duration {
	return time.Duration(float64(100*time.Millisecond) * (1 + 0.02*(2*r.Float64()-1)))
}

// load runs requests through h from concurrent clients, each making its
// requests one after another, and measures them. Request k's latencies
// depend only on (seed, k, attempt); which client runs it and the order in
// which the hedger sees outcomes depend on scheduling, so figures vary
// slightly from run to run.
type load struct {
	h        *Hedger
	seed     uint64
	clients  int
	next     uint64 // first request number of the next run
	attempts atomic.Int64
}

type stats struct {
	requests       int
	p50, p99, p999 time.Duration
	extra          float64 // attempts per request beyond the first
}

func (l *load) run(t *testing.T, m model, n int) stats {
	t.Helper()
	lat := make([]time.Duration, n)
	before := l.attempts.Load()
	first := l.next
	l.next += uint64(n)
	var wg sync.WaitGroup
	for c := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += l.clients {
				k := first + uint64(i)
				fn := func(ctx context.Context, attempt int) (int, error) {
					l.attempts.Add(1)
					d := m(rand.New(rand.NewPCG(l.seed, k<<3|uint64(attempt))))
					timer := time.NewTimer(d)
					defer timer.Stop()
					select {
					case <-timer.C:
						return attempt, nil
					case <-ctx.Done():
						return 0, context.Cause(ctx)
					}
				}
				start := time.Now()
				if _, err := Do(context.Background(), l.h, fn, nil); err != nil {
					t.Errorf("request %d: %v", k, err)
				}
				lat[i] = time.Since(start)
			}
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	return stats{
		requests: n,
		p50:      lat[n/2],
		p99:      lat[int(math.Ceil(0.99*float64(n)))-1],
		p999:     lat[int(math.Ceil(0.999*float64(n)))-1],
		extra:    float64(l.attempts.Load()-before)/float64(n) - 1,
	}
}

func (s stats) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("p50 %v, p99 %v, p99.9 %v, extra requests %.2f%%", r(s.p50), r(s.p99), r(s.p999), 100*s.extra)
}

// clients is the number of concurrent clients of the scenarios: 50
// clients of a 10 ms dependency make 5,000 requests per second, so the
// default budget's 10 s window holds about 50,000 requests.
const clients = 50

// TestTailAtScale: with 1% of calls taking 1 s and the rest about 10 ms,
// the default hedger (p95 delay, 10% budget) brings p99.9 from about 1 s
// down to about the delay plus a normal call, for about 5% more requests.
func TestTailAtScale(t *testing.T) {
	const n = 40000
	synctest.Test(t, func(t *testing.T) {
		base := &load{h: mustNew(t, Config{Budget: &tally.Budget{Allow: 0}}), seed: 1, clients: clients}
		unhedged := base.run(t, tailModel, n)

		h := mustNew(t, Config{})
		l := &load{h: h, seed: 1, clients: clients}
		l.run(t, tailModel, 4000) // warm-up: the estimator fills
		hedged := l.run(t, tailModel, n)
		delay, _ := h.Delay()

		t.Logf("unhedged: %v", unhedged)
		t.Logf("hedged:   %v (delay %v, hedge win share %.2f)", hedged, delay.Round(100*time.Microsecond), h.WinShare())

		if unhedged.p999 < 500*time.Millisecond {
			t.Fatalf("model check: unhedged p99.9 %v, want about 1s", unhedged.p999)
		}
		// "Close to delay + normal latency": a slow primary is answered by
		// a hedge started at the delay that takes a normal ~10 ms (p99.9
		// of the normal calls is about 19 ms).
		if limit := delay + 20*time.Millisecond; hedged.p999 > limit {
			t.Errorf("hedged p99.9 %v, want at most delay + 20ms = %v", hedged.p999, limit)
		}
		if hedged.extra < 0.03 || hedged.extra > 0.07 {
			t.Errorf("extra requests %.2f%%, want near 5%%", 100*hedged.extra)
		}
		if h.Suspended() {
			t.Errorf("hedging suspended with win share %.2f", h.WinShare())
		}
	})
}

// TestBackOffUnderUniformSlowness: when every replica is uniformly slow,
// hedges stop winning, the hedger suspends hedging and the extra load
// falls to the probes'; when the tail returns, probes win and hedging
// resumes.
func TestBackOffUnderUniformSlowness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := mustNew(t, Config{})
		l := &load{h: h, seed: 2, clients: clients}
		healthy := l.run(t, tailModel, 5000)
		t.Logf("tail, hedging:         %v, win share %.2f", healthy, h.WinShare())

		onset := l.run(t, uniformSlowModel, 2000)
		t.Logf("uniform slowness, onset: %v, win share %.3f, suspended %v", onset, h.WinShare(), h.Suspended())
		if !h.Suspended() {
			t.Fatalf("hedging not suspended after 2000 uniformly slow requests (win share %.3f)", h.WinShare())
		}
		slow := l.run(t, uniformSlowModel, 20000)
		t.Logf("uniform slowness, after: %v, win share %.3f", slow, h.WinShare())
		if slow.extra > 0.01 {
			t.Errorf("extra requests under uniform slowness %.2f%%, want below 1%% (probes only)", 100*slow.extra)
		}
		if slow.extra >= onset.extra {
			t.Errorf("extra load did not fall: %.2f%% at onset, %.2f%% after", 100*onset.extra, 100*slow.extra)
		}

		recovering := l.run(t, tailModel, 15000)
		t.Logf("tail returns, recovery: %v, win share %.2f, suspended %v", recovering, h.WinShare(), h.Suspended())
		recovered := l.run(t, tailModel, 20000)
		t.Logf("tail returns, after:    %v, win share %.2f, suspended %v", recovered, h.WinShare(), h.Suspended())
		if h.Suspended() {
			t.Errorf("hedging still suspended after the tail returned (win share %.3f)", h.WinShare())
		}
		if recovered.p999 > 100*time.Millisecond {
			t.Errorf("p99.9 %v after recovery, want hedged tail well under 1s", recovered.p999)
		}
	})
}
