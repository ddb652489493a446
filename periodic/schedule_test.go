package periodic

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/unherd/unherd/backoff"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		s    Schedule
		ok   bool
	}{
		{"interval only", Schedule{Interval: time.Minute}, true},
		{"every field", Schedule{Interval: time.Minute, Align: true, Spread: time.Second, Jitter: backoff.Equal, Fixed: true}, true},
		{"spread equal to interval", Schedule{Interval: time.Minute, Spread: time.Minute}, true},
		{"zero interval", Schedule{}, false},
		{"negative interval", Schedule{Interval: -time.Second}, false},
		{"negative spread", Schedule{Interval: time.Minute, Spread: -1}, false},
		{"spread above interval", Schedule{Interval: time.Minute, Spread: time.Minute + 1}, false},
		{"unknown jitter", Schedule{Interval: time.Minute, Jitter: backoff.None + 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Errorf("Validate() = %v, want ok=%v (errors wrap ErrInvalid)", err, tt.ok)
			}
			if _, nerr := NewSeries(tt.s, t0); (nerr == nil) != (err == nil) {
				t.Errorf("NewSeries error %v disagrees with Validate %v", nerr, err)
			}
		})
	}
}

func TestOffset(t *testing.T) {
	const sp = 8 * time.Second
	tests := []struct {
		name string
		j    backoff.Jitter
		prev time.Duration
		u    uint64
		want time.Duration
	}{
		{"full, lowest draw", backoff.Full, 0, 0, 0},
		{"full, highest draw is the spread", backoff.Full, 0, math.MaxUint64, sp},
		{"full, middle draw", backoff.Full, 0, 1 << 63, sp / 2},
		{"equal, lowest draw keeps half", backoff.Equal, 0, 0, sp / 2},
		{"equal, highest draw", backoff.Equal, 0, math.MaxUint64, sp},
		{"none is on the slot", backoff.None, 0, math.MaxUint64, 0},
		// base sp/8 = 1s; the first offset is drawn from [1s, 8s].
		{"decorrelated, first, highest draw", backoff.Decorrelated, 0, math.MaxUint64, sp},
		{"decorrelated, first, lowest draw", backoff.Decorrelated, 0, 0, time.Second},
		// prev 2s: [1s, 6s].
		{"decorrelated, highest draw", backoff.Decorrelated, 2 * time.Second, math.MaxUint64, 6 * time.Second},
		{"decorrelated, lowest draw is the base", backoff.Decorrelated, 2 * time.Second, 0, time.Second},
		// prev 4s: [1s, min(12s, 8s)], the ceiling capped before the draw.
		{"decorrelated, capped at the spread", backoff.Decorrelated, 4 * time.Second, math.MaxUint64, sp},
		{"decorrelated, middle draw under a capped ceiling", backoff.Decorrelated, 4 * time.Second, 1 << 63, 4500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Schedule{Interval: 10 * time.Second, Spread: sp, Jitter: tt.j}
			if got := s.Offset(tt.prev, tt.u); got != tt.want {
				t.Errorf("Offset(%v, %#x) = %v, want %v", tt.prev, tt.u, got, tt.want)
			}
		})
	}
	// A zero Spread is one Interval.
	if got := (Schedule{Interval: time.Minute}).Offset(0, math.MaxUint64); got != time.Minute {
		t.Errorf("zero Spread: highest offset %v, want 1m", got)
	}
}

func FuzzOffset(f *testing.F) {
	f.Add(int64(time.Minute), int64(0), uint8(0), int64(0), uint64(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), uint8(2), int64(math.MaxInt64), uint64(math.MaxUint64))
	f.Add(int64(1), int64(1), uint8(1), int64(-5), uint64(7))
	f.Fuzz(func(t *testing.T, interval, spread int64, j uint8, prev int64, u uint64) {
		s := Schedule{Interval: time.Duration(interval), Spread: time.Duration(spread), Jitter: backoff.Jitter(j)}
		if s.Validate() != nil {
			return
		}
		if got := s.Offset(time.Duration(prev), u); got < 0 || got > s.spread() {
			t.Fatalf("%+v: Offset(%v, %d) = %v, outside [0, %v]", s, prev, u, got, s.spread())
		}
	})
}

// ticks returns the first n ticks of s from t0, each asked for at the
// previous tick (a receiver that keeps up), drawing from a seeded source.
func ticks(t *testing.T, s Schedule, n int, seed uint64) []time.Time {
	t.Helper()
	q, err := NewSeries(s, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 0))
	out := make([]time.Time, n)
	now := t0
	for i := range out {
		out[i] = q.Next(now, r.Uint64())
		now = out[i]
	}
	return out
}

func TestSeriesNone(t *testing.T) {
	got := ticks(t, Schedule{Interval: time.Minute, Jitter: backoff.None}, 3, 1)
	for i, tk := range got {
		if want := t0.Add(time.Duration(i) * time.Minute); !tk.Equal(want) {
			t.Errorf("tick %d at %v, want %v", i, tk, want)
		}
	}
}

func TestSeriesAlign(t *testing.T) {
	// t0 is 10:00:30; the aligned slots start on each minute, and the one
	// at 10:00 has passed with no jitter, so the first tick is at 10:01.
	got := ticks(t, Schedule{Interval: time.Minute, Align: true, Jitter: backoff.None}, 2, 1)
	want := []time.Time{t0.Truncate(time.Minute).Add(time.Minute), t0.Truncate(time.Minute).Add(2 * time.Minute)}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("tick %d at %v, want %v", i, got[i], want[i])
		}
	}
	// With a spread of 10s every tick stays within 10s after a minute.
	for i, tk := range ticks(t, Schedule{Interval: time.Minute, Align: true, Spread: 10 * time.Second}, 200, 2) {
		if off := tk.Sub(tk.Truncate(time.Minute)); off > 10*time.Second {
			t.Fatalf("tick %d at %v: %v after the minute, want at most 10s", i, tk, off)
		}
	}
}

// TestSeriesNoDrift: after a million jittered ticks, each still lies in
// its own slot's window, exactly on the grid of the anchor.
func TestSeriesNoDrift(t *testing.T) {
	const n = 1_000_000
	s := Schedule{Interval: time.Second, Spread: 100 * time.Millisecond}
	got := ticks(t, s, n, 3)
	for k, tk := range got {
		slot := t0.Add(time.Duration(k) * time.Second)
		if tk.Before(slot) || tk.After(slot.Add(100*time.Millisecond)) {
			t.Fatalf("tick %d at %v, outside its slot [%v, +100ms]", k, tk, slot)
		}
	}
	// The mean gap is the interval: the last tick is within the spread of
	// slot n-1's start.
	if d := got[n-1].Sub(t0) - (n-1)*time.Second; d < 0 || d > 100*time.Millisecond {
		t.Errorf("after %d ticks the last is %v off its slot's start", n, d)
	}
}

func TestSeriesFixed(t *testing.T) {
	got := ticks(t, Schedule{Interval: time.Minute, Fixed: true}, 50, 4)
	if off := got[0].Sub(t0); off <= 0 || off > time.Minute {
		t.Fatalf("first tick %v after the start, want a jittered start in (0, 1m]", off)
	}
	for i := 1; i < len(got); i++ {
		if gap := got[i].Sub(got[i-1]); gap != time.Minute {
			t.Fatalf("gap %d is %v, want exactly 1m", i, gap)
		}
	}
}

func TestSeriesGaps(t *testing.T) {
	const iv, sp = time.Minute, 20 * time.Second
	got := ticks(t, Schedule{Interval: iv, Spread: sp, Jitter: backoff.Equal}, 2000, 5)
	var distinct = map[time.Duration]bool{}
	for i := 1; i < len(got); i++ {
		gap := got[i].Sub(got[i-1])
		if gap < iv-sp/2 || gap > iv+sp/2 {
			t.Fatalf("gap %d is %v; equal jitter over 20s keeps gaps in [50s, 70s]", i, gap)
		}
		distinct[gap] = true
	}
	if len(distinct) < 1000 {
		t.Errorf("%d distinct gaps in 2000 ticks: intervals are not jittered", len(distinct))
	}
}

// TestSeriesSkips: a caller that asks for the next tick long after the
// last one gets a tick on the grid after now, not the missed ones.
func TestSeriesSkips(t *testing.T) {
	q, err := NewSeries(Schedule{Interval: time.Minute, Jitter: backoff.None}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Next(t0, 0); !got.Equal(t0) {
		t.Fatalf("first tick %v, want %v", got, t0)
	}
	late := t0.Add(10*time.Minute + time.Second)
	if got, want := q.Next(late, 0), t0.Add(11*time.Minute); !got.Equal(want) {
		t.Errorf("after a stall to %v: next tick %v, want %v", late, got, want)
	}
	// A stall of a century costs no more than a few turns.
	far := t0.Add(100 * 365 * 24 * time.Hour)
	if got := q.Next(far, 0); got.Before(far) || got.Sub(far) > time.Minute {
		t.Errorf("after a century: next tick %v, want within a minute after %v", got, far)
	}
}

// TestFleetSpread: a thousand processes with the same minute-aligned
// schedule all fire in the same instant without jitter, and spread over
// the minute with the default.
func TestFleetSpread(t *testing.T) {
	peak := func(s Schedule) int {
		perSecond := map[int64]int{}
		r := rand.New(rand.NewPCG(6, 0))
		for range 1000 {
			q, err := NewSeries(s, t0)
			if err != nil {
				t.Fatal(err)
			}
			perSecond[q.Next(t0, r.Uint64()).Unix()]++
		}
		m := 0
		for _, n := range perSecond {
			m = max(m, n)
		}
		return m
	}
	if got := peak(Schedule{Interval: time.Minute, Align: true, Jitter: backoff.None}); got != 1000 {
		t.Errorf("no jitter: %d of 1000 in the busiest second, want all", got)
	}
	// Uniform over 60 s: about 17 a second; 40 would be far in the tail.
	if got := peak(Schedule{Interval: time.Minute, Align: true}); got > 40 {
		t.Errorf("full jitter: %d of 1000 in the busiest second, want at most 40", got)
	}
}

func BenchmarkSeriesNext(b *testing.B) {
	q, err := NewSeries(Schedule{Interval: time.Second}, t0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	now := t0
	for i := 0; b.Loop(); i++ {
		now = q.Next(now, uint64(i)*0x9e3779b97f4a7c15)
	}
}

// TestDecorrelatedNoPile: decorrelated offsets wander but never pile up on
// the spread, where backoff's cap-after-draw would put about half of them
// (on the next slot's start, all together, when Spread is Interval).
func TestDecorrelatedNoPile(t *testing.T) {
	s := Schedule{Interval: time.Minute, Jitter: backoff.Decorrelated}
	r := rand.New(rand.NewPCG(7, 0))
	var prev time.Duration
	atCap := 0
	for range 100_000 {
		prev = s.Offset(prev, r.Uint64())
		if prev == time.Minute {
			atCap++
		}
	}
	if atCap > 0 {
		t.Errorf("%d of 100000 offsets exactly at the spread", atCap)
	}
}
