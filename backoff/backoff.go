package backoff

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/unherd/unherd/internal/validate"
)

// Defaults used for zero fields of a [Schedule].
const (
	DefaultBase          = 50 * time.Millisecond
	DefaultThrottledBase = 1 * time.Second
	DefaultCap           = 20 * time.Second
	// DefaultMultiplier is the growth of the ceiling per retry when
	// Schedule.Multiplier is zero: it doubles.
	DefaultMultiplier = 2
)

// Jitter selects how randomness spreads a delay. The zero value is Full.
type Jitter uint8

const (
	// Full draws uniformly from [0, temp]. The default.
	Full Jitter = iota
	// Equal waits temp/2 plus a uniform draw from [0, temp/2].
	Equal
	// Decorrelated is min(cap, uniform[base, 3*prev]), where prev is the
	// previous delay (base for the first retry): the draw first, the cap
	// after, so some delays sit exactly at the cap.
	Decorrelated
	// None waits exactly temp. Retries of clients that failed together stay
	// together; use it only in tests and demonstrations.
	None
)

var jitterNames = [...]string{Full: "full", Equal: "equal", Decorrelated: "decorrelated", None: "none"}

// String returns the jitter's lower-case name, as ParseJitter accepts it.
func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("Jitter(%d)", uint8(j))
}

// ErrInvalid is wrapped by every error that Validate and ParseJitter return.
var ErrInvalid = errors.New("backoff: invalid schedule")

// ParseJitter returns the Jitter named s: "full", "equal", "decorrelated"
// or "none".
func ParseJitter(s string) (Jitter, error) {
	for i, n := range jitterNames {
		if n == s {
			return Jitter(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown jitter %q (want full, equal, decorrelated or none)", ErrInvalid, s)
}

// Schedule is a capped exponential (or constant) delay schedule with
// jitter. The zero value is full jitter, base 50 ms, throttled base 1 s,
// cap 20 s, and a ceiling that doubles with each retry. A Schedule is a
// value without state: it is safe to copy and to use from many goroutines
// at once.
type Schedule struct {
	// Base is the ceiling of the first retry's delay; each later retry
	// multiplies it by Multiplier (doubles it, by default). Zero means
	// DefaultBase (50 ms).
	Base time.Duration
	// ThrottledBase replaces Base after a throttling error (HTTP 429, gRPC
	// RESOURCE_EXHAUSTED): a server that asks for less traffic should get a
	// longer pause than one that merely failed. Zero means
	// DefaultThrottledBase (1 s), or Cap if Cap is smaller.
	ThrottledBase time.Duration
	// Cap bounds every delay. Zero means DefaultCap (20 s).
	Cap time.Duration
	// Jitter spreads delays; the zero value is Full.
	Jitter Jitter
	// Multiplier is the factor by which the ceiling grows from one retry
	// to the next: temp = min(Cap, base*Multiplier^n), as gRPC's
	// backoffMultiplier (proposal A6), resilience4j's, Polly's and
	// cenkalti/backoff's multipliers are. Zero means DefaultMultiplier
	// (2: each retry doubles the ceiling). It must be finite and not
	// negative; 1 keeps the ceiling at the base, and a value between 0
	// and 1 shrinks it with each retry, as A6 allows (the ceiling never
	// falls below zero). Full, Equal and None jitter and CapAfterDraw all
	// draw from that ceiling. Decorrelated jitter has none (it grows from
	// the previous delay, by Brooker's factor of 3), so it accepts only 0
	// or 2 here; a Constant schedule accepts only 0 or 1.
	Multiplier float64
	// Constant, when true, keeps temp at the base instead of growing it
	// (jitter still applies; use None for a fixed delay).
	Constant bool
	// Immediate, when true, makes every delay zero: retries run back to
	// back. It exists for tests and benchmarks; never point it at a real
	// dependency.
	Immediate bool
	// CapAfterDraw, with Full jitter, draws from [0, base*Multiplier^n]
	// and caps the draw, instead of drawing within
	// [0, min(cap, base*Multiplier^n)]. It is
	// the AWS SDKs' standard mode ("retry behaviour 2.0"), which computes
	// min(b*2^n, cap) with b uniform in [0, 1]: once base*2^n passes the
	// cap, a growing share of the delays sit exactly at the cap. Other
	// jitters ignore it.
	CapAfterDraw bool
}

// Validate reports a schedule that cannot work as configured: negative
// durations, a base above the cap, an unknown jitter, decorrelated
// jitter on a constant schedule, or a Multiplier that is negative, not
// finite, or at odds with Constant or Decorrelated.
func (s Schedule) Validate() error {
	m := s.Multiplier
	switch {
	case m < 0 || math.IsNaN(m) || math.IsInf(m, 0):
		return fmt.Errorf("%w: Multiplier %v is not a finite factor of zero or more; use zero for the default doubling", ErrInvalid, m)
	case s.Constant && m != 0 && m != 1:
		return fmt.Errorf("%w: Multiplier %v on a Constant schedule, whose ceiling never grows; drop one of them", ErrInvalid, m)
	case s.Jitter == Decorrelated && m != 0 && m != DefaultMultiplier:
		return fmt.Errorf("%w: Multiplier %v with decorrelated jitter, which grows from the previous delay by a factor of 3 and has no ceiling to multiply; use Full, Equal or None jitter", ErrInvalid, m)
	}
	if err := validate.NonNegative(ErrInvalid,
		validate.Field{Name: "Base", Value: s.Base, Hint: "; use zero for the 50ms default"},
		validate.Field{Name: "ThrottledBase", Value: s.ThrottledBase, Hint: "; use zero for the 1s default"},
		validate.Field{Name: "Cap", Value: s.Cap, Hint: "; use zero for the 20s default"},
	); err != nil {
		return err
	}
	switch {
	case s.Jitter > None:
		return fmt.Errorf("%w: unknown Jitter %d", ErrInvalid, s.Jitter)
	case s.Constant && s.Jitter == Decorrelated:
		return fmt.Errorf("%w: decorrelated jitter grows from the previous delay and cannot be constant", ErrInvalid)
	}
	if c := s.cap(); s.Base > c {
		return fmt.Errorf("%w: Base %v is above Cap %v", ErrInvalid, s.Base, c)
	} else if s.ThrottledBase > c {
		return fmt.Errorf("%w: ThrottledBase %v is above Cap %v; raise Cap or lower ThrottledBase", ErrInvalid, s.ThrottledBase, c)
	}
	return nil
}

// bounds returns the effective base and cap. It takes the fields, not
// the struct, so that the hot path neither copies a Schedule nor takes
// its address (bench/NOTES.md, "Hot-path layout").
func bounds(base, throttledBase, capd time.Duration, throttled bool) (b, c time.Duration) {
	c = orDefault(capd, DefaultCap)
	b = orDefault(base, DefaultBase)
	if throttled {
		b = orDefault(throttledBase, DefaultThrottledBase)
	}
	return min(b, c), c
}

func (s Schedule) cap() time.Duration { return orDefault(s.Cap, DefaultCap) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Draw returns a random draw for Delay from the global, concurrency-safe
// source of math/rand/v2.
func Draw() uint64 { return rand.Uint64() }

// Delay returns the wait before retry n (zero-based: the first retry is
// n = 0). prev is the previous delay, used only by decorrelated jitter
// (zero for the first retry); u is a uniformly random 64-bit draw. Delay is
// a pure function: the same inputs give the same result. It never
// overflows, never returns a negative duration and never exceeds the cap.
func (s Schedule) Delay(n int, prev time.Duration, u uint64) time.Duration {
	return delay(s.Base, DefaultBase, s.Cap, n, u, s.Jitter, s.Constant, s.Immediate, s.CapAfterDraw, s.Multiplier, prev)
}

// ThrottledDelay is Delay after a throttling error: the same schedule grown
// from ThrottledBase instead of Base.
func (s Schedule) ThrottledDelay(n int, prev time.Duration, u uint64) time.Duration {
	return delay(s.ThrottledBase, DefaultThrottledBase, s.Cap, n, u, s.Jitter, s.Constant, s.Immediate, s.CapAfterDraw, s.Multiplier, prev)
}

// delay is Delay grown from base (def if base is not positive), with the
// rest of the Schedule's fields. It takes the fields, not the Schedule:
// a struct of that many fields lives in memory, so a callee taking one
// stores every field on entry and loads it back; the fields come in
// registers and stay there (bench/NOTES.md, "Hot-path layout"). The
// arguments of the default schedule's path come first, prev (decorrelated
// jitter's alone) last.
func delay(base, def, capd time.Duration, n int, u uint64, j Jitter, constant, immediate, capAfter bool, m float64, prev time.Duration) time.Duration {
	if immediate {
		return 0
	}
	c := orDefault(capd, DefaultCap)
	b := min(orDefault(base, def), c)
	switch {
	case grows(m):
		return scaledDelay(b, c, j, constant, capAfter, m, n, prev, u)
	case j == Decorrelated:
		return decorrelated(b, c, prev, u)
	case capAfter && j == Full:
		return capAfterDraw(b, c, constant, n, u)
	}
	return jitter(j, temp(b, c, constant, n), u)
}

// Temp returns the un-jittered ceiling for retry n:
// min(cap, base*Multiplier^n), or base for a constant schedule.
func (s Schedule) Temp(n int, throttled bool) time.Duration {
	if s.Immediate {
		return 0
	}
	b, c := bounds(s.Base, s.ThrottledBase, s.Cap, throttled)
	if grows(s.Multiplier) {
		return scaled(b, c, s.Constant, s.Multiplier, n)
	}
	return temp(b, c, s.Constant, n)
}

// MeanTemp returns the mean of Temp(n, throttled) over the retries n
// from first up to but not including last, or 0 when there are none:
// the average ceiling of the retries a call has left, which a caller
// pacing a refused retry waits on. It is exact for any count: the
// ceilings grow, then stay at the cap (or, for a constant schedule, at
// the base), and the retries at the cap are counted rather than summed,
// so a huge attempt limit gives the cap rather than a saturated sum.
func (s Schedule) MeanTemp(first, last int, throttled bool) time.Duration {
	if s.Immediate || last <= first {
		return 0
	}
	b, c := bounds(s.Base, s.ThrottledBase, s.Cap, throttled)
	m, g := s.Multiplier, grows(s.Multiplier)
	var sum, t, prev time.Duration
	capped := 0 // retries at the cap, past the growing prefix summed
	for n := first; n < last; n++ {
		if g {
			t = scaled(b, c, s.Constant, m, n)
		} else {
			t = temp(b, c, s.Constant, n)
		}
		if n > first && t == prev {
			capped = last - n // every retry left waits t
			break
		}
		if t > math.MaxInt64-sum {
			sum = math.MaxInt64
		} else {
			sum += t
		}
		prev = t
	}
	count := float64(last - first)
	mean := float64(sum) / count
	if capped > 0 {
		mean += float64(t) * (float64(capped) / count)
	}
	if !(mean < math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(mean)
}

// temp is min(c, b*2^n), or b if constant, for 0 < b <= c.
func temp(b, c time.Duration, constant bool, n int) time.Duration {
	if constant || n <= 0 {
		return b
	}
	// base<<n would exceed cap exactly when base > cap>>n; checking that
	// way round never overflows.
	if n >= 63 || b > c>>uint(n) {
		return c
	}
	return b << uint(n)
}

// grows reports whether m, a Schedule's Multiplier, is other than the
// default doubling, which temp computes exactly with shifts.
func grows(m float64) bool { return m != 0 && m != DefaultMultiplier }

// scaled is min(c, b*m^n), or b if constant, for 0 < b <= c and a
// multiplier m other than 2, computed in floating point: m^n overflows to
// +Inf (and the result to c) or underflows to 0 rather than wrap. A
// float64 below float64(c) converts to a Duration no larger than c, since
// float64(c) is the float nearest c.
func scaled(b, c time.Duration, constant bool, m float64, n int) time.Duration {
	if constant || n <= 0 || m == 1 {
		return b
	}
	f := float64(b) * math.Pow(m, float64(n))
	if !(f < float64(c)) {
		return c
	}
	return min(time.Duration(f), c)
}

// scaledDelay is Delay for a multiplier m other than 2: the jitter of
// delay, drawn from scaled's ceiling.
func scaledDelay(b, c time.Duration, j Jitter, constant, capAfter bool, m float64, n int, prev time.Duration, u uint64) time.Duration {
	if capAfter && j == Full {
		return min(c, Uniform(u, scaled(b, math.MaxInt64, constant, m, n)))
	}
	if j == Decorrelated {
		return decorrelated(b, c, prev, u)
	}
	return jitter(j, scaled(b, c, constant, m, n), u)
}

// jitter applies Full, Equal or None jitter to the ceiling t.
func jitter(j Jitter, t time.Duration, u uint64) time.Duration {
	switch j {
	case Full:
		return Uniform(u, t)
	case None:
		return t
	default: // Equal
		half := t / 2
		return t - half + Uniform(u, half)
	}
}

// capAfterDraw is min(c, uniform[0, b*m^n]), b*m^n saturating rather
// than overflow (the draw then lands above c all but always, as it would
// without saturation).
func capAfterDraw(b, c time.Duration, constant bool, n int, u uint64) time.Duration {
	return min(c, Uniform(u, temp(b, math.MaxInt64, constant, n)))
}

// decorrelated is min(c, uniform[b, 3*prev]) with prev at least b: the
// draw is taken over the whole range first and capped after, as in
// Brooker's formula sleep = min(cap, random_between(base, sleep*3)), so
// that once 3*prev passes the cap a share of the delays sit exactly at
// the cap. Drawing within [b, min(c, 3*prev)] instead would spread those
// delays below the cap: a different distribution, which finishes the
// contention experiment sooner than the published simulator.
func decorrelated(b, c, prev time.Duration, u uint64) time.Duration {
	// No delay this function returns exceeds c, so a larger prev can come
	// only from a caller; it is treated as c. 3*prev saturates rather than
	// overflow (only a cap above 97 years reaches that).
	prev = min(max(prev, b), c)
	hi := time.Duration(math.MaxInt64) // 3*prev saturated
	if prev <= math.MaxInt64/3 {
		hi = 3 * prev
	}
	return min(c, b+Uniform(u, hi-b))
}

// Uniform maps a uniformly random 64-bit draw u onto [0, max], 0 for
// max <= 0, without division: the high word of u*(max+1) is uniform over
// that range to within 2^-64. It is the draw every jitter of a Schedule
// makes; use it to jitter a delay of your own the same way (the retry
// loop does, for the wait of a refused retry and the jitter on top of a
// server-directed delay).
func Uniform(u uint64, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(u, uint64(max)+1)
	return time.Duration(hi)
}
