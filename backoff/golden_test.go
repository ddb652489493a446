package backoff

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// delayDigest is the FNV-1a hash of every delay that goldenDelays gives,
// recorded from an implementation checked against the published formulas
// (TestDelayExactDraws and the tests around it). A change to how Delay
// computes must keep every delay bit for bit, and so this hash.
const delayDigest = 0xae5818b945a601ec

// goldenDelays calls Delay and ThrottledDelay for a grid of schedules,
// retry numbers, previous delays and draws, in a fixed order.
func goldenDelays(each func(time.Duration)) {
	ms := time.Millisecond
	var schedules []Schedule
	for _, j := range []Jitter{Full, Equal, Decorrelated, None} {
		for _, m := range []float64{0, 1, 1.5, 2, 3, 0.5} {
			for _, bc := range [][3]time.Duration{
				{0, 0, 0},
				{100 * ms, 2 * time.Second, 10 * time.Second},
				{1, 3, math.MaxInt64},
				{math.MaxInt64 / 3, math.MaxInt64 / 2, math.MaxInt64},
				{7 * ms, 0, 5 * ms},
			} {
				for _, flags := range []uint8{0, 1, 2, 4} {
					schedules = append(schedules, Schedule{
						Base: bc[0], ThrottledBase: bc[1], Cap: bc[2], Jitter: j, Multiplier: m,
						Constant: flags&1 != 0, Immediate: flags&2 != 0, CapAfterDraw: flags&4 != 0,
					})
				}
			}
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	draws := []uint64{0, 1, math.MaxUint64, 1 << 63}
	for range 8 {
		draws = append(draws, rnd.Uint64())
	}
	ns := []int{math.MinInt, -1, 0, 1, 2, 3, 7, 8, 30, 61, 62, 63, 64, 1000, math.MaxInt}
	prevs := []time.Duration{math.MinInt64, 0, 1, 40 * ms, 3 * time.Second, math.MaxInt64 / 3, math.MaxInt64}
	for _, s := range schedules {
		for _, n := range ns {
			for _, prev := range prevs {
				for _, u := range draws {
					each(s.Delay(n, prev, u))
					each(s.ThrottledDelay(n, prev, u))
				}
			}
		}
	}
}

func TestDelayGolden(t *testing.T) {
	h := fnv.New64a()
	var buf [8]byte
	count := 0
	goldenDelays(func(d time.Duration) {
		for i := range buf {
			buf[i] = byte(uint64(d) >> (8 * i))
		}
		h.Write(buf[:])
		count++
	})
	if got := h.Sum64(); got != delayDigest {
		t.Fatalf("digest of %d delays = %#x, want %#x", count, got, uint64(delayDigest))
	}
}
