package core

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// herdWaits returns the waits that n clients, whose first attempts all
// failed with err at the same instant, would wait before their retries,
// with seeded draws.
func herdWaits(t *testing.T, cfg Config, err error, n int) []time.Duration {
	t.Helper()
	cfg.Budget = budget.Unlimited
	p := mustNew(t, cfg)
	r := rand.New(rand.NewPCG(1, 2))
	waits := make([]time.Duration, n)
	for i := range waits {
		c := p.Begin(false)
		if err := c.Admit(context.Background()); err != nil {
			t.Fatal(err)
		}
		d := c.Done(t0, time.Time{}, err, r.Uint64())
		if d.Reason != nil {
			t.Fatalf("client %d stopped: %v", i, d.Reason)
		}
		waits[i] = d.Delay
	}
	return waits
}

// spread checks that waits cover [lo, hi] evenly: every tenth of the
// window gets between half and one and a half times its share, and no
// single instant gets more than one client in a hundred.
func spread(t *testing.T, waits []time.Duration, lo, hi time.Duration) {
	t.Helper()
	var buckets [10]int
	at := map[time.Duration]int{}
	for _, w := range waits {
		if w < lo || w > hi {
			t.Fatalf("wait %v outside [%v, %v]", w, lo, hi)
		}
		b := min(int(int64(w-lo)*10/int64(hi-lo)), 9)
		buckets[b]++
		at[w]++
	}
	share := len(waits) / 10
	for i, n := range buckets {
		if n < share/2 || n > share*3/2 {
			t.Errorf("tenth %d of [%v, %v] holds %d of %d waits, want about %d: %v", i, lo, hi, n, len(waits), share, buckets)
		}
	}
	for w, n := range at {
		if n > len(waits)/100 {
			t.Errorf("%d of %d clients wait exactly %v", n, len(waits), w)
		}
	}
}

// A thousand clients told "Retry-After: 0" (or an HTTP-date in the past)
// spread over the schedule's window for a first throttled retry, full
// jitter over [0, 1 s], instead of all coming back at once.
func TestServerDelayZeroSpreads(t *testing.T) {
	waits := herdWaits(t, Config{}, Judge(errBoom, Verdict{Class: failure.Throttled, Delay: 0, HasDelay: true}), 1000)
	spread(t, waits, 0, time.Second)
}

// Told "5 s", they spread over the server's jitter, [5 s, 5.5 s].
func TestServerDelayFiveSecondsSpreads(t *testing.T) {
	waits := herdWaits(t, Config{}, Judge(errBoom, Verdict{Class: failure.Throttled, Delay: 5 * time.Second, HasDelay: true}), 1000)
	spread(t, waits, 5*time.Second, 5500*time.Millisecond)
}

// With no server jitter and a delay below the schedule's window, the
// schedule alone spreads them: told 300 ms, a client waits the longer of
// 300 ms and its own draw in [0, 1 s].
func TestServerDelayFloorWithoutJitter(t *testing.T) {
	waits := herdWaits(t, Config{ServerJitter: -1}, Judge(errBoom, Verdict{Class: failure.Throttled, Delay: 300 * time.Millisecond, HasDelay: true}), 1000)
	at300 := 0
	for _, w := range waits {
		if w < 300*time.Millisecond || w > time.Second {
			t.Fatalf("wait %v outside [300ms, 1s]", w)
		}
		if w == 300*time.Millisecond {
			at300++
		}
	}
	// About 30% of the draws fall below 300 ms and wait exactly that.
	if at300 < 230 || at300 > 370 {
		t.Errorf("%d of 1000 wait exactly 300ms, want about 300", at300)
	}
	spread(t, slicesAbove(waits, 300*time.Millisecond), 300*time.Millisecond, time.Second)
}

func slicesAbove(ws []time.Duration, floor time.Duration) []time.Duration {
	var out []time.Duration
	for _, w := range ws {
		if w > floor {
			out = append(out, w)
		}
	}
	return out
}
