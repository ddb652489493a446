package breaker

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
)

// snapshot is the breaker's state as far as a result can change it.
type snapshot struct {
	state             uint64
	probes, successes int
	consec            int64
	calls, failures   int64
}

func (b *Breaker) snapshot(now int64) snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, failures := b.win.Sums(now)
	return snapshot{b.state.Load(), b.probes, b.successes, b.consec.Load(), calls, failures}
}

// FuzzBreaker drives a breaker with a random sequence of admissions,
// results (fresh and stale) and clock steps, and checks its invariants
// after every operation:
//   - never more probes in flight than HalfOpenProbes, and the breaker's
//     count equals the half-open tickets of the current generation still
//     held;
//   - an open breaker rejects with ErrOpen until its open period ends, and
//     the period lasts between OpenDuration and OpenDuration*(1+OpenJitter),
//     saturating at the largest time the breaker can represent: durations
//     up to math.MaxInt64, with and without jitter, never wrap around;
//   - a result with a stale ticket changes nothing;
//   - state changes follow only the legal edges, one generation each;
//   - no count is ever negative.
func FuzzBreaker(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 3, 3, 3, 3, 3, 2, 2, 2, 0, 3})
	f.Add([]byte{1, 2, 5, 0, 0, 0, 11, 19, 27, 2, 250, 0, 1, 3, 4, 5, 0, 3})
	f.Add([]byte{2, 7, 8, 0, 8, 16, 24, 3, 11, 19, 2, 2, 2, 2, 0, 0, 0, 35, 43, 3})
	// Huge open durations tripped after a clock step (254) by one failure
	// (19): math.MaxInt64 without jitter, with full jitter, and
	// math.MaxInt64/2 with full jitter; then admissions while open.
	f.Add([]byte{0x20, 0x00, 0, 254, 0, 19, 0, 254, 0})
	f.Add([]byte{0x20, 0x20, 0, 254, 0, 19, 0, 254, 0})
	f.Add([]byte{0x10, 0x20, 0, 254, 0, 19, 0, 254, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		open := []time.Duration{time.Second, math.MaxInt64 / 2, math.MaxInt64}[data[0]>>4%3]
		s := Settings{
			ConsecutiveFailures: int(data[0]%4) + 1,
			FailureRate:         []float64{-1, 0.25, 0.5, 1}[data[0]>>2%4],
			MinCalls:            int(data[1]%8) + 1,
			Window:              []time.Duration{time.Second, 10 * time.Second}[data[1]>>3%2],
			OpenDuration:        open,
			OpenJitter:          []float64{-1, 0.2, 1}[data[1]>>4%3],
			HalfOpenProbes:      int(data[2]%3) + 1,
			SuccessThreshold:    int(data[2]>>2%3) + 1,
			Rand:                rand.NewPCG(uint64(data[2]), 9),
		}
		type edge struct{ from, to State }
		var edges []edge
		s.OnStateChange = func(from, to State) { edges = append(edges, edge{from, to}) }
		b := mustNew(t, s)
		jitter := max(s.OpenJitter, 0)

		now := t0
		var held []uint64
		outcomes := []admission.Outcome{success, transient, permanent, abandoned,
			{Err: errBoom, Class: failure.Timeout}, {Err: errBoom, Class: failure.Throttled}}
		prev := b.state.Load()
		for _, op := range data[3:] {
			before := b.snapshot(b.ns(now))
			var staleDone bool
			switch op % 4 {
			case 0, 1:
				openUntil := b.openUntil.Load()
				tk, err := b.AdmitAt(now)
				switch {
				case before.state&3 == uint64(Open) && b.ns(now) < openUntil:
					if !errors.Is(err, ErrOpen) {
						t.Fatalf("open until %d, admitted at %d: err = %v", openUntil, b.ns(now), err)
					}
				case errors.Is(err, ErrOpen):
					t.Fatalf("ErrOpen at %d, open until %d, state %d", b.ns(now), openUntil, before.state&3)
				case errors.Is(err, ErrTooManyProbes):
					if b.probes != s.HalfOpenProbes {
						t.Fatalf("ErrTooManyProbes with %d of %d probes in flight", b.probes, s.HalfOpenProbes)
					}
				case err != nil:
					t.Fatalf("unexpected error %v", err)
				default:
					held = append(held, tk)
				}
			case 2:
				now = now.Add(time.Duration(op>>2) * 50 * time.Millisecond)
			case 3:
				if len(held) == 0 {
					continue
				}
				i := int(op>>2) % len(held)
				tk := held[i]
				held = append(held[:i], held[i+1:]...)
				staleDone = tk != b.state.Load()
				b.DoneAt(now, tk, outcomes[int(op>>4)%len(outcomes)])
			}

			after := b.snapshot(b.ns(now))
			if staleDone && after != before {
				t.Fatalf("a stale result changed the breaker: %+v -> %+v", before, after)
			}
			if after.probes < 0 || after.probes > s.HalfOpenProbes || after.successes < 0 ||
				after.consec < 0 || after.calls < 0 || after.failures < 0 || after.failures > after.calls {
				t.Fatalf("counts out of range: %+v", after)
			}
			inFlight := 0
			for _, tk := range held {
				if tk == after.state && State(tk&3) == HalfOpen {
					inFlight++
				}
			}
			if State(after.state&3) == HalfOpen && inFlight != after.probes {
				t.Fatalf("breaker counts %d probes, %d half-open tickets are held", after.probes, inFlight)
			}
			if after.state != prev {
				if after.state>>2 != prev>>2+1 {
					t.Fatalf("generation %d -> %d in one operation", prev>>2, after.state>>2)
				}
				if State(after.state&3) == Open {
					n := b.ns(now) // >= 0: the clock only moves forward from the epoch
					d := time.Duration(b.openUntil.Load() - n)
					// The longest period, with a little slack for float64
					// rounding of huge durations, saturated like the breaker.
					hi := time.Duration(math.MaxInt64)
					if f := float64(open) * (1 + jitter) * (1 + 1e-12); f < math.MaxInt64 {
						hi = time.Duration(f)
					}
					lo := min(open, time.Duration(math.MaxInt64-n))
					hi = min(hi, time.Duration(math.MaxInt64-n))
					if d < lo || d > hi {
						t.Fatalf("open for %v, want [%v, %v]", d, lo, hi)
					}
				}
				prev = after.state
			}
		}
		legal := map[edge]bool{{Closed, Open}: true, {Open, HalfOpen}: true, {HalfOpen, Open}: true, {HalfOpen, Closed}: true}
		state := Closed
		for _, e := range edges {
			if !legal[e] || e.from != state {
				t.Fatalf("illegal transition %v -> %v from state %v; all: %v", e.from, e.to, state, edges)
			}
			state = e.to
		}
		if state != b.State() {
			t.Fatalf("transitions end in %v, breaker is %v", state, b.State())
		}
	})
}
