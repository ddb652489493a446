package periodic

import (
	"errors"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
)

// ErrInvalid is wrapped by every error that Validate returns.
var ErrInvalid = errors.New("periodic: invalid schedule")

// Schedule says when a periodic job runs. Interval is required; the other
// fields' zero values spread a fleet's runs over the whole interval, with
// full jitter redrawn every tick. A Schedule is a plain value: copy it and
// share it freely (only Rand, if set, decides whether tickers built from
// one Schedule may run at once; see its doc).
type Schedule struct {
	// Interval is the nominal period: slot k starts at anchor + k*Interval,
	// computed by multiplication from the anchor, so no delay of the
	// ticker, the timer or the job ever accumulates into drift.
	Interval time.Duration
	// Align, when true, anchors the slots on multiples of Interval of the
	// wall clock (since the Unix epoch), as cron and systemd calendar
	// timers do: "every minute" means on each minute, plus the jitter.
	// When false, the anchor is the instant the ticker starts.
	Align bool
	// Spread is the window after each slot's start in which its tick
	// lands: the tick fires at the slot's start plus an offset in
	// [0, Spread] drawn as Jitter says. Zero means Interval, which spreads
	// a fleet's runs evenly over the whole period. It may not exceed
	// Interval, so ticks stay in order.
	Spread time.Duration
	// Jitter chooses how each offset is drawn, with package backoff's
	// kinds applied to a constant ceiling of Spread:
	//
	//   - Full (the zero value): uniform in [0, Spread].
	//   - Equal: Spread/2 plus a uniform draw from [0, Spread/2].
	//   - Decorrelated: uniform in [Spread/8, min(Spread, 3*previous
	//     offset)], the first in [Spread/8, Spread] so that the start is
	//     spread as widely: successive offsets wander instead of being
	//     independent. The ceiling is
	//     capped before the draw, unlike backoff's decorrelated delay,
	//     whose draws above the cap sit exactly at the cap: offsets piled
	//     on Spread would put a share of the fleet on one instant, the
	//     next slot's start when Spread is Interval.
	//   - None: every offset is zero, every tick exactly on its slot's
	//     start. Processes that share a clock then all run at once: use
	//     it for tests and for showing the storm it causes.
	Jitter backoff.Jitter
	// Fixed, when true, draws the offset once, for the first tick, and
	// keeps it: a jittered start and then ticks exactly Interval apart (a
	// stable phase per ticker, like systemd's FixedRandomDelay). When
	// false, every tick draws its own offset: the gap between two ticks
	// then lies in [Interval-Spread, Interval+Spread].
	Fixed bool
	// Rand is the source of the ticker's random draws; nil means
	// math/rand/v2's global source. A Ticker or Run calls it from one
	// goroutine, so a Schedule used by several tickers at once needs a Rand
	// that is safe for concurrent use, as the default is.
	Rand func() uint64
}

// Validate reports a schedule that cannot work: a non-positive Interval,
// a negative Spread or one above Interval, or an unknown Jitter.
func (s Schedule) Validate() error {
	switch {
	case s.Interval <= 0:
		return fmt.Errorf("%w: Interval %v must be above zero", ErrInvalid, s.Interval)
	case s.Spread < 0:
		return fmt.Errorf("%w: Spread %v is negative; use zero for a spread of one Interval", ErrInvalid, s.Spread)
	case s.Spread > s.Interval:
		return fmt.Errorf("%w: Spread %v is above Interval %v; ticks would come out of order", ErrInvalid, s.Spread, s.Interval)
	case s.Jitter > backoff.None:
		return fmt.Errorf("%w: unknown Jitter %d", ErrInvalid, s.Jitter)
	}
	return nil
}

// spread is the effective Spread.
func (s Schedule) spread() time.Duration {
	if s.Spread == 0 {
		return s.Interval
	}
	return s.Spread
}

// Offset returns a tick's offset from its slot's start: the jitter
// applied to Spread, as the Jitter field describes. prev is the previous
// offset (used only by decorrelated jitter; zero for the first tick) and
// u a uniformly random 64-bit draw. Offset is a pure function: it never
// returns a negative duration or one above Spread.
func (s Schedule) Offset(prev time.Duration, u uint64) time.Duration {
	sp := s.spread()
	switch s.Jitter {
	case backoff.None:
		return 0
	case backoff.Decorrelated:
		lo := sp / 8
		if prev <= 0 {
			prev = sp // the first tick: the widest range
		}
		prev = min(max(prev, lo), sp)
		hi := sp
		if prev <= sp/3 {
			hi = 3 * prev
		}
		return lo + full(hi-lo, u)
	case backoff.Equal:
		return sp - sp/2 + full(sp/2, u)
	default:
		return full(sp, u)
	}
}

// full is a uniform draw from [0, d]: backoff's full jitter on a constant
// ceiling of d.
func full(d time.Duration, u uint64) time.Duration {
	if d <= 0 {
		return 0
	}
	return backoff.Schedule{Base: d, Cap: d, Constant: true}.Delay(0, 0, u)
}

// Series is the state of one run of ticks of a Schedule: its anchor, the
// slot it reached and the last offset. Its method is pure arithmetic on
// the instants and draws it is given, which is what Ticker and Run drive
// in real time and the simulator in virtual time. The zero Series is not
// usable; a Series is used by one goroutine at a time.
type Series struct {
	s      Schedule
	anchor time.Time
	slot   int64 // slot of the last tick; -1 before the first
	offset time.Duration
}

// NewSeries returns the series of s that starts at start. With s.Align
// the anchor is the latest multiple of Interval at or before start;
// otherwise it is start itself.
func NewSeries(s Schedule, start time.Time) (*Series, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	anchor := start
	if s.Align {
		anchor = start.Truncate(s.Interval)
	}
	return &Series{s: s, anchor: anchor, slot: -1}, nil
}

// Next returns the next tick at or after now: the following slot's start
// plus its offset (drawn from u unless Fixed keeps the first one). A tick
// that would fall before now is skipped, and so is its slot: after a long
// job or a stalled process the series resumes on the grid, never with a
// burst of late ticks. Ticks are strictly increasing.
func (q *Series) Next(now time.Time, u uint64) time.Time {
	for {
		q.slot++
		if q.slot == 0 || !q.s.Fixed {
			q.offset = q.s.Offset(q.offset, u)
		}
		t := q.at(q.slot)
		if !t.Before(now) {
			return t
		}
		// Jump to the slot whose start is the last at or before now; the
		// loop's next turn tries the one after it if that tick is past
		// too. The jump keeps a long stall from costing a turn per slot.
		if k := int64(now.Sub(q.anchor) / q.s.Interval); k > q.slot {
			q.slot = k - 1
		}
	}
}

// at is the tick time of slot k with the current offset.
func (q *Series) at(k int64) time.Time {
	return q.anchor.Add(time.Duration(k)*q.s.Interval + q.offset)
}
