package backoff

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/configtest"
)

func TestTemp(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		s         Schedule
		n         int
		throttled bool
		want      time.Duration
	}{
		{"zero value first retry is base", Schedule{}, 0, false, 50 * ms},
		{"doubles", Schedule{}, 3, false, 400 * ms},
		{"capped", Schedule{}, 10, false, DefaultCap},
		{"huge attempt gives cap", Schedule{}, 1000, false, DefaultCap},
		{"max int attempt gives cap", Schedule{}, math.MaxInt, false, DefaultCap},
		{"negative attempt is first", Schedule{}, -5, false, 50 * ms},
		{"throttled base", Schedule{}, 0, true, time.Second},
		{"throttled doubles", Schedule{}, 2, true, 4 * time.Second},
		{"constant", Schedule{Constant: true, Base: time.Second}, 40, false, time.Second},
		{"immediate", Schedule{Immediate: true}, 5, false, 0},
		{"base above cap clamps", Schedule{Base: time.Hour, Cap: time.Minute}, 0, false, time.Minute},
		{"max durations", Schedule{Base: math.MaxInt64, Cap: math.MaxInt64}, 62, false, math.MaxInt64},
		{"1ns base 62 doublings", Schedule{Base: 1, Cap: math.MaxInt64}, 62, false, 1 << 62},
		{"multiplier 2 is the default", Schedule{Multiplier: 2}, 3, false, 400 * ms},
		{"multiplier 1.5", Schedule{Base: 100 * ms, Multiplier: 1.5}, 2, false, 225 * ms},
		{"multiplier 1.5 throttled", Schedule{Multiplier: 1.5}, 2, true, 2250 * ms},
		{"multiplier 1.5 capped", Schedule{Base: 100 * ms, Cap: time.Second, Multiplier: 1.5}, 6, false, time.Second},
		{"multiplier 3", Schedule{Base: ms, Multiplier: 3}, 4, false, 81 * ms},
		{"multiplier 1 stays at base", Schedule{Base: time.Second, Multiplier: 1}, 1 << 40, false, time.Second},
		{"multiplier 0.5 shrinks", Schedule{Base: time.Second, Multiplier: 0.5}, 2, false, 250 * ms},
		{"multiplier 0.5 reaches zero", Schedule{Base: time.Second, Multiplier: 0.5}, 1000, false, 0},
		{"huge multiplier gives cap", Schedule{Multiplier: math.MaxFloat64}, 2, false, DefaultCap},
		{"tiny multiplier huge attempt", Schedule{Multiplier: math.SmallestNonzeroFloat64}, math.MaxInt, false, 0},
		{"multiplier near 1 max int attempt gives cap", Schedule{Multiplier: 1 + 1e-15}, math.MaxInt, false, DefaultCap},
		{"multiplier max durations", Schedule{Base: math.MaxInt64, Cap: math.MaxInt64, Multiplier: 1.5}, 62, false, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Temp(tc.n, tc.throttled); got != tc.want {
				t.Fatalf("Temp(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestDelayExactDraws(t *testing.T) {
	ms := time.Millisecond
	s := Schedule{Base: 100 * ms, Cap: 10 * time.Second}
	tests := []struct {
		name   string
		jitter Jitter
		n      int
		prev   time.Duration
		u      uint64
		want   time.Duration
	}{
		{"full draw 0 gives 0", Full, 2, 0, 0, 0},
		{"full max draw gives temp", Full, 2, 0, math.MaxUint64, 400 * ms},
		{"full half draw gives half", Full, 2, 0, 1 << 63, 200 * ms},
		{"equal draw 0 gives half", Equal, 2, 0, 0, 200 * ms},
		{"equal max draw gives temp", Equal, 2, 0, math.MaxUint64, 400 * ms},
		{"none ignores draw", None, 2, 0, 12345, 400 * ms},
		{"decorrelated first starts at base", Decorrelated, 0, 0, 0, 100 * ms},
		{"decorrelated first max is 3 base", Decorrelated, 0, 0, math.MaxUint64, 300 * ms},
		{"decorrelated grows from prev", Decorrelated, 7, time.Second, math.MaxUint64, 3 * time.Second},
		{"decorrelated capped", Decorrelated, 7, 9 * time.Second, math.MaxUint64, 10 * time.Second},
		// uniform[100ms, 27s] at its midpoint is 13.55s: capped after the
		// draw, not drawn within [100ms, 10s] (which would give 5.05s).
		{"decorrelated draws first caps after", Decorrelated, 7, 9 * time.Second, 1 << 63, 10 * time.Second},
		{"decorrelated below cap", Decorrelated, 7, 3 * time.Second, 1 << 62, 100*ms + (9*time.Second-100*ms)/4},
		{"decorrelated prev below base starts at base", Decorrelated, 7, ms, math.MaxUint64, 300 * ms},
		{"decorrelated prev above cap", Decorrelated, 7, time.Hour, 0, 100 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			s.Jitter = tc.jitter
			if got := s.Delay(tc.n, tc.prev, tc.u); got != tc.want {
				t.Fatalf("Delay = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestJitterStatistics checks each jitter's range and mean over many
// seeded draws.
func TestJitterStatistics(t *testing.T) {
	const draws = 200000
	s := Schedule{Base: 100 * time.Millisecond, Cap: 10 * time.Second}
	temp := float64(s.Temp(3, false)) // 800ms
	tests := []struct {
		jitter   Jitter
		lo, hi   float64
		wantMean float64
	}{
		{Full, 0, temp, temp / 2},
		{Equal, temp / 2, temp, temp * 3 / 4},
		{None, temp, temp, temp},
		// Decorrelated from prev = 800ms: uniform [100ms, 2400ms].
		{Decorrelated, 100e6, 2400e6, 1250e6},
	}
	for _, tc := range tests {
		t.Run(tc.jitter.String(), func(t *testing.T) {
			s := s
			s.Jitter = tc.jitter
			r := rand.New(rand.NewPCG(1, 2))
			var sum float64
			for range draws {
				d := float64(s.Delay(3, 800*time.Millisecond, r.Uint64()))
				if d < tc.lo || d > tc.hi {
					t.Fatalf("delay %v outside [%v, %v]", time.Duration(d), time.Duration(tc.lo), time.Duration(tc.hi))
				}
				sum += d
			}
			mean := sum / draws
			// Standard error of a uniform mean over 200k draws is well
			// under 0.5% of the range; allow 1%.
			if tol := 0.01 * (tc.hi - tc.lo + 1); math.Abs(mean-tc.wantMean) > tol {
				t.Fatalf("mean %v, want %v ± %v", time.Duration(mean), time.Duration(tc.wantMean), time.Duration(tol))
			}
		})
	}
}

// TestDecorrelatedNearCap checks decorrelated jitter's distribution once
// 3*prev passes the cap: the draw is uniform over [base, 3*prev] and then
// capped, so the share of delays at exactly the cap is the share of that
// range above it, and the rest are uniform below the cap.
func TestDecorrelatedNearCap(t *testing.T) {
	const draws = 200000
	ms := time.Millisecond
	s := Schedule{Base: 100 * ms, Cap: 10 * time.Second, Jitter: Decorrelated}
	prev := 5 * time.Second // draws uniform in [100ms, 15s]
	lo, hi, c := float64(100*ms), float64(15*time.Second), float64(s.Cap)
	wantAtCap := (hi - c) / (hi - lo) // 0.336
	wantMeanBelow := (lo + c) / 2     // 5.05s

	r := rand.New(rand.NewPCG(3, 4))
	var atCap, below int
	var sumBelow float64
	for range draws {
		d := s.Delay(5, prev, r.Uint64())
		switch {
		case d == s.Cap:
			atCap++
		case d < s.Base || d > s.Cap:
			t.Fatalf("delay %v outside [%v, %v]", d, s.Base, s.Cap)
		default:
			below++
			sumBelow += float64(d)
		}
	}
	// The standard error of a proportion near 1/3 over 200k draws is
	// about 0.001; allow 0.005.
	if got := float64(atCap) / draws; math.Abs(got-wantAtCap) > 0.005 {
		t.Errorf("share at cap %.4f, want %.4f", got, wantAtCap)
	}
	if mean := sumBelow / float64(below); math.Abs(mean-wantMeanBelow) > 0.01*(c-lo) {
		t.Errorf("mean below cap %v, want %v", time.Duration(mean), time.Duration(wantMeanBelow))
	}

	// A chain from prev = base, each delay the next one's prev, grows to
	// the cap; from prev = cap the next delay is the cap again with
	// probability (3c-c)/(3c-base), about 2/3. Over 64 steps (seeded),
	// some delays sit at exactly the cap.
	chainAtCap := 0
	var p time.Duration
	for n := range 64 {
		p = s.Delay(n, p, r.Uint64())
		if p == s.Cap {
			chainAtCap++
		}
	}
	if chainAtCap == 0 {
		t.Errorf("a 64-step chain never reached the cap exactly")
	}
}

func TestValidate(t *testing.T) {
	row := configtest.Row[Schedule]
	configtest.Check(t, ErrInvalid, Schedule.Validate, []configtest.Case[Schedule]{
		row("zero", Schedule{}, true),
		row("negative base", Schedule{Base: -1}, false),
		row("negative throttled", Schedule{ThrottledBase: -1}, false),
		row("negative cap", Schedule{Cap: -1}, false),
		row("base above cap", Schedule{Base: time.Minute, Cap: time.Second}, false),
		row("throttled above cap", Schedule{Cap: 500 * time.Millisecond, ThrottledBase: time.Second}, false),
		row("default throttled clamps to small cap", Schedule{Cap: 500 * time.Millisecond}, true),
		row("small cap with small throttled", Schedule{Cap: 500 * time.Millisecond, ThrottledBase: 100 * time.Millisecond}, true),
		row("unknown jitter", Schedule{Jitter: 9}, false),
		row("constant decorrelated", Schedule{Constant: true, Jitter: Decorrelated}, false),
		row("multiplier 1.5", Schedule{Multiplier: 1.5}, true),
		row("multiplier below 1", Schedule{Multiplier: 0.5}, true),
		row("negative multiplier", Schedule{Multiplier: -2}, false),
		row("NaN multiplier", Schedule{Multiplier: math.NaN()}, false),
		row("infinite multiplier", Schedule{Multiplier: math.Inf(1)}, false),
		row("constant multiplier 1", Schedule{Constant: true, Multiplier: 1}, true),
		row("constant multiplier 3", Schedule{Constant: true, Multiplier: 3}, false),
		row("decorrelated multiplier 2", Schedule{Jitter: Decorrelated, Multiplier: 2}, true),
		row("decorrelated multiplier 1.5", Schedule{Jitter: Decorrelated, Multiplier: 1.5}, false),
		row("equal multiplier 1.5", Schedule{Jitter: Equal, Multiplier: 1.5}, true),
	})
}

func TestParseJitter(t *testing.T) {
	for _, j := range []Jitter{Full, Equal, Decorrelated, None} {
		got, err := ParseJitter(j.String())
		if err != nil || got != j {
			t.Fatalf("ParseJitter(%q) = %v, %v", j, got, err)
		}
	}
	if _, err := ParseJitter("fuzzy"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ParseJitter(fuzzy) error = %v", err)
	}
	if s := Jitter(42).String(); s != "Jitter(42)" {
		t.Fatalf("String = %q", s)
	}
}

func TestDelayAllocs(t *testing.T) {
	s := Schedule{Jitter: Decorrelated}
	if n := testing.AllocsPerRun(100, func() { s.Delay(3, time.Second, Draw()) }); n != 0 {
		t.Fatalf("Delay allocates %v times", n)
	}
}

// FuzzDelay checks the arithmetic's invariants for any schedule and input:
// never negative, never above the cap, and within the jitter's bounds.
func FuzzDelay(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), uint8(0), false, 0, int64(0), uint64(0))
	f.Add(int64(1), int64(1), int64(math.MaxInt64), uint8(2), false, 1000, int64(math.MaxInt64), uint64(math.MaxUint64))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), uint8(1), true, math.MaxInt, int64(-1), uint64(1<<63))
	f.Add(int64(5e6), int64(1e9), int64(2e9), uint8(3), false, 62, int64(0), uint64(7))
	f.Add(int64(1), int64(1), int64(math.MaxInt64), uint8(2), false, 3, int64(math.MaxInt64/2), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, base, tbase, capd int64, jitter uint8, constant bool, n int, prev int64, u uint64) {
		s := Schedule{Base: time.Duration(base), ThrottledBase: time.Duration(tbase), Cap: time.Duration(capd), Jitter: Jitter(jitter % 4), Constant: constant, CapAfterDraw: jitter&4 != 0}
		if s.Validate() != nil {
			return
		}
		for _, throttled := range []bool{false, true} {
			b, c := bounds(s.Base, s.ThrottledBase, s.Cap, throttled)
			var d time.Duration
			if throttled {
				d = s.ThrottledDelay(n, time.Duration(prev), u)
			} else {
				d = s.Delay(n, time.Duration(prev), u)
			}
			temp := s.Temp(n, throttled)
			if temp < b || temp > c {
				t.Fatalf("temp %v outside [base %v, cap %v]", temp, b, c)
			}
			if d < 0 || d > c {
				t.Fatalf("delay %v outside [0, cap %v]", d, c)
			}
			switch s.Jitter {
			case Full:
				if d > temp {
					t.Fatalf("full delay %v above temp %v", d, temp)
				}
			case Equal:
				if d < temp/2 || d > temp {
					t.Fatalf("equal delay %v outside [%v, %v]", d, temp/2, temp)
				}
			case None:
				if d != temp {
					t.Fatalf("none delay %v != temp %v", d, temp)
				}
			case Decorrelated:
				if d < b {
					t.Fatalf("decorrelated delay %v below base %v", d, b)
				}
			}
		}
	})
}

var sink time.Duration

// BenchmarkBackoffFull measures one full-jitter delay including its random
// draw from the global source.
func BenchmarkBackoffFull(b *testing.B) {
	b.ReportAllocs()
	s := Schedule{}
	var d time.Duration
	for i := 0; b.Loop(); i++ {
		d += s.Delay(i&15, 0, Draw())
	}
	sink = d
}

// TestCapAfterDraw checks the AWS standard mode's formula, min(b*2^n, cap)
// with b uniform in [0, 1]: below the cap it is Full jitter, and once
// base*2^n passes the cap the draws above it sit exactly at the cap.
func TestCapAfterDraw(t *testing.T) {
	s := Schedule{Base: time.Second, Cap: 20 * time.Second, CapAfterDraw: true}
	full := Schedule{Base: time.Second, Cap: 20 * time.Second}
	const half = uint64(1) << 63 // b = 0.5
	tests := []struct {
		name string
		n    int
		u    uint64
		want time.Duration
	}{
		{"below the cap, as full jitter", 2, half, 2 * time.Second},
		{"b*2^5 = 16 s stays under the cap", 5, half, 16 * time.Second},
		{"b*2^5 = 24 s is capped after the draw", 5, half + half/2, 20 * time.Second},
		{"a huge attempt number saturates, then caps", 1000, 1 << 40, 20 * time.Second},
		{"b = 0 is still zero", 1000, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Delay(tc.n, 0, tc.u); got != tc.want {
				t.Errorf("Delay(%d, %#x) = %v, want %v", tc.n, tc.u, got, tc.want)
			}
		})
	}
	// The share at the cap: for n = 5, P(b*32 s >= 20 s) = 12/32.
	var atCap, fullAtCap int
	const draws = 1 << 16
	for i := range draws {
		u := uint64(i) << 48
		if s.Delay(5, 0, u) == 20*time.Second {
			atCap++
		}
		if full.Delay(5, 0, u) == 20*time.Second {
			fullAtCap++
		}
	}
	if got, want := float64(atCap)/draws, 12.0/32; math.Abs(got-want) > 0.001 {
		t.Errorf("share at the cap = %.4f, want %.4f", got, want)
	}
	if fullAtCap > 1 {
		t.Errorf("without CapAfterDraw %d draws sit at the cap, want at most 1", fullAtCap)
	}
}

// Uniform covers [0, max] from the smallest draw to the largest, and
// gives 0 for a range that is empty or negative.
func TestUniform(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    uint64
		max  time.Duration
		want time.Duration
	}{
		{"smallest draw", 0, time.Second, 0},
		{"largest draw", math.MaxUint64, time.Second, time.Second},
		{"middle draw", 1 << 63, 2 * time.Second, time.Second},
		{"zero range", math.MaxUint64, 0, 0},
		{"negative range", math.MaxUint64, -time.Second, 0},
		{"largest range", math.MaxUint64, math.MaxInt64, math.MaxInt64},
	} {
		if got := Uniform(tc.u, tc.max); got != tc.want {
			t.Errorf("%s: Uniform(%d, %v) = %v, want %v", tc.name, tc.u, tc.max, got, tc.want)
		}
	}
}

// TestMultiplierJitters checks that every jitter that draws from the
// ceiling draws from the multiplied one: Full, Equal and None, in Delay
// and ThrottledDelay alike, and CapAfterDraw.
func TestMultiplierJitters(t *testing.T) {
	ms := time.Millisecond
	const top = math.MaxUint64 // a draw of (nearly) the whole range
	const half = uint64(1) << 63
	base := Schedule{Base: 100 * ms, Cap: 10 * time.Second, Multiplier: 1.5}
	tests := []struct {
		name      string
		jitter    Jitter
		capAfter  bool
		throttled bool
		n         int
		u         uint64
		want      time.Duration
	}{
		{"none", None, false, false, 2, 0, 225 * ms},
		{"full top", Full, false, false, 2, top, 225 * ms},
		{"full half", Full, false, false, 2, half, 112500 * time.Microsecond},
		{"equal zero draw", Equal, false, false, 2, 0, 112500 * time.Microsecond},
		{"equal top", Equal, false, false, 2, top, 225 * ms},
		{"none throttled", None, false, true, 2, 0, 2250 * ms},
		{"cap after draw", Full, true, false, 12, top, 10 * time.Second},
		{"cap after draw below cap", Full, true, false, 2, half, 112500 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.Jitter, s.CapAfterDraw = tc.jitter, tc.capAfter
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			var got time.Duration
			if tc.throttled {
				got = s.ThrottledDelay(tc.n, 0, tc.u)
			} else {
				got = s.Delay(tc.n, 0, tc.u)
			}
			if got != tc.want {
				t.Fatalf("delay %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMultiplierDefaultUnchanged checks that Multiplier 0 and 2 give the
// zero value's delays exactly, for every jitter and many draws: the
// simulator's published results depend on them.
func TestMultiplierDefaultUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for j := Full; j <= None; j++ {
		for _, capAfter := range []bool{false, true} {
			zero := Schedule{Jitter: j, CapAfterDraw: capAfter}
			two := zero
			two.Multiplier = 2
			for i := 0; i < 2000; i++ {
				n, prev, u := r.IntN(80), time.Duration(r.Int64N(int64(30*time.Second))), r.Uint64()
				if a, b := zero.Delay(n, prev, u), two.Delay(n, prev, u); a != b {
					t.Fatalf("%v: Delay(%d, %v, %d) = %v with Multiplier 0, %v with 2", j, n, prev, u, a, b)
				}
				if a, b := zero.ThrottledDelay(n, prev, u), two.ThrottledDelay(n, prev, u); a != b {
					t.Fatalf("%v: ThrottledDelay(%d) = %v with Multiplier 0, %v with 2", j, n, a, b)
				}
			}
		}
	}
}

// FuzzSchedule checks the multiplied schedule's invariants for any
// multiplier, base, cap and attempt: the ceiling never negative, never
// above the cap, monotone in the attempt (growing for a multiplier of 1
// or more, shrinking below 1, and never above the base then), and every
// delay within [0, cap], with no overflow however large the attempt or
// the multiplier.
func FuzzSchedule(f *testing.F) {
	f.Add(int64(0), int64(0), 1.5, uint8(0), 0, uint64(0))
	f.Add(int64(1), int64(math.MaxInt64), 1.0000001, uint8(1), math.MaxInt-1, uint64(math.MaxUint64))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), math.MaxFloat64, uint8(4), 62, uint64(1<<63))
	f.Add(int64(1e9), int64(2e9), 0.5, uint8(3), 1000, uint64(7))
	f.Add(int64(1), int64(1), math.SmallestNonzeroFloat64, uint8(2), 1, uint64(3))
	f.Add(int64(3), int64(math.MaxInt64), 3.0, uint8(0), 39, uint64(99))
	f.Fuzz(func(t *testing.T, base, capd int64, m float64, jitter uint8, n int, u uint64) {
		s := Schedule{Base: time.Duration(base), Cap: time.Duration(capd), Multiplier: m, Jitter: Jitter(jitter % 4), CapAfterDraw: jitter&4 != 0}
		if s.Validate() != nil {
			return
		}
		n = max(n, 0) // negative attempts are the first; covered by FuzzDelay
		grows := m == 0 || m >= 1
		for _, throttled := range []bool{false, true} {
			b, c := bounds(s.Base, s.ThrottledBase, s.Cap, throttled)
			tn := s.Temp(n, throttled)
			if tn < 0 || tn > c {
				t.Fatalf("Temp(%d) = %v outside [0, cap %v]", n, tn, c)
			}
			if n < math.MaxInt {
				next := s.Temp(n+1, throttled)
				if grows && (next < tn || tn < b) || !grows && (next > tn || tn > b) {
					t.Fatalf("multiplier %v: Temp(%d) = %v, Temp(%d) = %v, base %v: not monotone from the base", m, n, tn, n+1, next, b)
				}
			}
			var d time.Duration
			if throttled {
				d = s.ThrottledDelay(n, 0, u)
			} else {
				d = s.Delay(n, 0, u)
			}
			if d < 0 || d > c {
				t.Fatalf("delay %v outside [0, cap %v]", d, c)
			}
			if s.Jitter != Decorrelated && !s.CapAfterDraw && d > tn {
				t.Fatalf("delay %v above the ceiling %v", d, tn)
			}
		}
	})
}

// MeanTemp is the mean of Temp over its range, for schedules that grow
// by doubling or by another multiplier, constant or immediate ones, and
// ranges long enough to reach the cap; a range of a billion retries
// gives the cap, not a saturated sum.
func TestMeanTemp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		s := Schedule{
			Base:          time.Duration(rng.Int64N(int64(time.Second))),
			ThrottledBase: time.Duration(rng.Int64N(int64(time.Second))),
			Cap:           time.Duration(rng.Int64N(int64(time.Minute))),
			Constant:      rng.IntN(8) == 0,
			Immediate:     rng.IntN(16) == 0,
		}
		switch rng.IntN(3) {
		case 1:
			s.Multiplier = 1 + 3*rng.Float64()
		case 2:
			s.Multiplier = 2
		}
		first := rng.IntN(10)
		last := first + rng.IntN(70)
		throttled := rng.IntN(2) == 0
		var sum float64
		for n := first; n < last; n++ {
			sum += float64(s.Temp(n, throttled))
		}
		var want time.Duration
		if last > first {
			want = time.Duration(sum / float64(last-first))
		}
		got := s.MeanTemp(first, last, throttled)
		if d := math.Abs(float64(got - want)); d > 1e-9*float64(want)+1 {
			t.Fatalf("case %d: %+v.MeanTemp(%d, %d, %v) = %v, want %v", i, s, first, last, throttled, got, want)
		}
	}
	s := Schedule{Base: time.Millisecond, Cap: 20 * time.Second}
	if got := s.MeanTemp(0, 1e9, false); got < 20*time.Second-time.Millisecond || got > 20*time.Second {
		t.Errorf("MeanTemp over a billion retries = %v, want about the cap, 20s", got)
	}
	if got := s.MeanTemp(3, 3, false); got != 0 {
		t.Errorf("MeanTemp over no retries = %v, want 0", got)
	}
}
