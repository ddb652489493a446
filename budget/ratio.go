package budget

import (
	"cmp"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [RatioConfig].
const (
	// DefaultRatio is the share of requests that may be retried: 10%,
	// the per-client retry budget of Google's Site Reliability Engineering
	// book, chapter 21 "Handling Overload"
	// (https://sre.google/sre-book/handling-overload/).
	// Finagle's RetryBudget defaults to 20%.
	DefaultRatio = 0.1
	// DefaultMinPerSecond is the floor of retries per second allowed
	// whatever the traffic, so that a client with few requests can still
	// retry: 10, the default of Finagle's RetryBudget
	// (https://twitter.github.io/finagle/guide/Clients.html#retries) and of
	// Linkerd's retry budgets (minRetriesPerSecond).
	DefaultMinPerSecond = 10
	// DefaultWindow is how far back requests and retries are counted:
	// 10 s, Finagle's and Linkerd's default (ttl).
	DefaultWindow = 10 * time.Second
	// MinWindow is the shortest Window a RatioConfig may set.
	MinWindow = time.Millisecond
)

// ratioSlots is how many slots the window is cut into: the window slides
// in steps of Window/ratioSlots (500 ms by default), so it always covers
// between 95% and 100% of Window.
const ratioSlots = 20

// RatioConfig configures a [Ratio] budget. The zero value allows retries up
// to 10% of the requests of the last 10 s, plus 10 retries per second.
//
// Hedged requests draw on a budget of the same kind, with a smaller share
// and no floor:
//
//	hedges, err := budget.NewRatio(budget.RatioConfig{Ratio: 0.05, NoFloor: true})
type RatioConfig struct {
	// Ratio is the most retries allowed per request counted in the window.
	// It must be positive and finite; values above 1 allow more retries
	// than requests. Zero means DefaultRatio (0.1).
	Ratio float64
	// MinPerSecond is a floor of retries per second that the budget
	// allows whatever the traffic: the window allows MinPerSecond *
	// Window seconds retries more than the ratio gives (100 by default).
	// As in Finagle, that is a reserve per window, not a rate: it can be
	// spent in one burst, and comes back in one when those retries leave
	// the window. It must not be negative. Zero means
	// DefaultMinPerSecond (10); to have no floor, set NoFloor.
	MinPerSecond float64
	// NoFloor removes the floor: retries are at most Ratio times the
	// requests in the window, and a client that has made no requests may
	// not retry at all. MinPerSecond must then be zero.
	NoFloor bool
	// Window is how far back requests and retries are counted. It must be
	// at least MinWindow (1 ms). Zero means DefaultWindow (10 s).
	Window time.Duration
	// Now is the clock. Nil means the real clock, time.Now, read as
	// time.Since the budget's creation: that needs only the monotonic
	// clock, which costs half of time.Now on this kind of machine. The
	// clock is read by Withdraw and by Record of first attempts, and
	// nowhere else.
	Now func() time.Time
}

// Validate reports settings that cannot work, naming the field.
func (c *RatioConfig) Validate() error {
	switch {
	case c.Ratio < 0 || math.IsNaN(c.Ratio) || math.IsInf(c.Ratio, 0):
		return fmt.Errorf("%w: RatioConfig.Ratio %v is not a positive finite number; use 0 for the default of 0.1", ErrInvalidConfig, c.Ratio)
	case c.MinPerSecond < 0 || math.IsNaN(c.MinPerSecond) || math.IsInf(c.MinPerSecond, 0):
		return fmt.Errorf("%w: RatioConfig.MinPerSecond %v is not a non-negative finite number; use 0 for the default of 10, or NoFloor for none", ErrInvalidConfig, c.MinPerSecond)
	case c.NoFloor && c.MinPerSecond != 0:
		return fmt.Errorf("%w: RatioConfig.MinPerSecond %v is set together with NoFloor", ErrInvalidConfig, c.MinPerSecond)
	case c.Window < 0:
		return fmt.Errorf("%w: RatioConfig.Window %v is negative; use 0 for the default of 10s", ErrInvalidConfig, c.Window)
	case c.Window != 0 && c.Window < MinWindow:
		return fmt.Errorf("%w: RatioConfig.Window %v is shorter than %v", ErrInvalidConfig, c.Window, MinWindow)
	}
	return nil
}

// Ratio is a retry budget over a sliding window, in the manner of Finagle's
// RetryBudget and Linkerd's retry budgets: the retries in the window may
// be at most Ratio times the requests in the window, plus a floor of
// MinPerSecond retries per second. Requests are counted by Record of a
// first attempt (Attempt.N == 1), whatever its outcome; retries by
// Withdraw. Unlike a token bucket, a ratio budget scales with traffic and
// forgets: after Window, an outage leaves no trace.
//
// A Ratio is safe for concurrent use; share one among all the goroutines
// calling one dependency. The zero Ratio is not usable; call NewRatio.
//
// The window is a ring of 20 time slots, each with atomic counters of
// requests and retries; a slot that has fallen out of the window is reset
// lazily by the first call that needs it, under a mutex taken only for
// that reset (once per slot per Window/20). Recording a request is one
// monotonic clock read and one atomic add to the current slot. The clock
// read is about half the cost (profile of BenchmarkRatioParallel); the
// rest is the slot's cache line moving between cores. Striping the count
// over 16 padded counters picked at random (what internal/rolling does)
// measured 47 ns/op against 50 for one shared counter, clock read
// included, on two cores: too little to pay for making every Withdraw sum
// 16 times as many words.
//
// Counts may be off by the few calls in flight at the instant a slot is
// reset; retries are checked after they are counted, so goroutines racing
// for the last retry in the budget err on the side of refusing.
type Ratio struct {
	// Read-only after NewRatio.
	ratio   float64
	reserve float64 // MinPerSecond * Window seconds
	period  int64   // slot length, ns
	origin  time.Time
	now     func() time.Time // nil: time.Since(origin)

	mu sync.Mutex // serialises slot resets only

	// periods[i] is the index of the period slots[i] counts. They are
	// apart from the counters: read by every call, written once per
	// period, they stay in every core's cache while the current slot's
	// counters move between cores (BenchmarkRatioParallel: 55 ns/op
	// against 70 with the period beside its counters, when the two cores
	// do not share a cache; the same 35 when they do).
	periods [ratioSlots]atomic.Int64
	_       [cacheLine]byte

	slots [ratioSlots]ratioSlot
}

// ratioSlot counts one period. Each slot has its own cache line: the
// current slot is written by every request, its neighbours are not.
type ratioSlot struct {
	requests atomic.Int64
	retries  atomic.Int64
	_        [cacheLine - 16]byte
}

// NewRatio validates cfg and returns an empty budget. It reads the clock
// once, to fix the window's origin.
func NewRatio(cfg RatioConfig) (*Ratio, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	window := cmp.Or(cfg.Window, DefaultWindow)
	r := &Ratio{
		ratio:  cmp.Or(cfg.Ratio, DefaultRatio),
		period: int64(window / ratioSlots),
		now:    cfg.Now,
	}
	if !cfg.NoFloor {
		r.reserve = cmp.Or(cfg.MinPerSecond, DefaultMinPerSecond) * window.Seconds()
	}
	if r.now != nil {
		r.origin = r.now()
	} else {
		r.origin = time.Now()
	}
	for i := range r.slots {
		r.periods[i].Store(int64(i - ratioSlots)) // all out of the window
	}
	return r, nil
}

// Withdraw reports whether a retry may go ahead now, and counts it if so.
// A Permanent failure is never retried.
func (r *Ratio) Withdraw(c Class) bool {
	if c >= Permanent {
		return false // without reading the clock
	}
	return r.withdraw(r.index(r.elapsed()))
}

// WithdrawAt is Withdraw at the instant now.
func (r *Ratio) WithdrawAt(now time.Time, c Class) bool {
	if c >= Permanent {
		return false
	}
	return r.withdraw(r.index(now.Sub(r.origin)))
}

// withdraw is Withdraw in period p.
func (r *Ratio) withdraw(p int64) bool {
	s := r.slot(p)
	s.retries.Add(1)
	requests, retries := r.sum(p)
	if float64(retries) > r.ratio*float64(requests)+r.reserve {
		s.retries.Add(-1)
		return false
	}
	return true
}

// Record counts a request when a is a call's first attempt; other attempts
// change nothing and read no clock.
func (r *Ratio) Record(a Attempt) {
	if a.N == 1 {
		r.slot(r.index(r.elapsed())).requests.Add(1)
	}
}

// RecordAt is Record at the instant now.
func (r *Ratio) RecordAt(now time.Time, a Attempt) {
	if a.N == 1 {
		r.slot(r.index(now.Sub(r.origin))).requests.Add(1)
	}
}

// Counts returns the requests and retries counted in the window that ends
// at now.
func (r *Ratio) Counts(now time.Time) (requests, retries int64) {
	return r.sum(r.index(now.Sub(r.origin)))
}

// elapsed reads the clock: the time since the origin.
func (r *Ratio) elapsed() time.Duration {
	if r.now == nil {
		return time.Since(r.origin)
	}
	return r.now().Sub(r.origin)
}

// index returns the number of the period that holds the instant d after
// the origin. A clock reading before the origin counts as the origin.
func (r *Ratio) index(d time.Duration) int64 {
	return max(int64(d), 0) / r.period
}

// slot returns the slot of period p, reset first if it still holds an
// older period. A slot already holding a newer period (an injected clock
// that stepped back) is used as it is.
func (r *Ratio) slot(p int64) *ratioSlot {
	i := p % ratioSlots
	s, period := &r.slots[i], &r.periods[i]
	if period.Load() < p {
		r.mu.Lock()
		if period.Load() < p {
			// Zero before publishing the period: a caller that sees the
			// new period adds to zeroed counters.
			s.requests.Store(0)
			s.retries.Store(0)
			period.Store(p)
		}
		r.mu.Unlock()
	}
	return s
}

// sum adds up the slots whose period is within the window ending in
// period p. A retry undone just after its slot was reset can leave -1
// behind; totals are reported as at least zero.
func (r *Ratio) sum(p int64) (requests, retries int64) {
	for i := range r.slots {
		s := &r.slots[i]
		if e := r.periods[i].Load(); e > p-ratioSlots && e <= p {
			requests += s.requests.Load()
			retries += s.retries.Load()
		}
	}
	return max(requests, 0), max(retries, 0)
}
