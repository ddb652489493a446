package budget

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/rolling"
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
	// Now is the clock. Nil means the real clock, read as time.Since the
	// budget's creation (the monotonic clock only). Withdraw reads it;
	// nothing else does.
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
// Record, on every call's path, reads no clock and takes no lock: it adds
// to one of several padded counters, and the counts reach the window's
// time slots when they are folded in, spread evenly over the time since
// the previous fold: by Counts, and by a Withdraw that the counts folded
// so far would refuse. For
// a steady stream of requests that is exact on average; requests recorded
// in a burst after a long quiet spell are placed partly in the quiet
// spell, and may leave the window early, which makes the budget stricter,
// never looser. Withdraw reads the clock once and takes no lock in the
// common case: it takes the retry with one compare-and-swap from a lease,
// retries that the window, as last counted, allows in the current time
// slot. Leases are striped like Record's counters, so that goroutines on
// different cores each take from their own. Only when a goroutine's lease
// is spent or its slot has passed does it decide under a mutex (and lease
// again), counting every retry the other leases still hold as taken: so
// goroutines racing for the last retries of the budget never overspend
// it, and every decision is the one the counts give at that instant. The
// window is internal/rolling's, the same as the circuit breaker's and the
// client-side throttle's.
type Ratio struct {
	// Read-only after NewRatio; Record and Withdraw read them on every call.
	ratio   float64
	reserve float64 // MinPerSecond * Window seconds
	origin  time.Time
	now     func() time.Time             // nil: time.Since(origin)
	w       *rolling.Window              // a = requests, b = retries; times in ns since origin
	leases  *[rolling.Stripes]ratioLease // by r.w.Stripe, as Record's counts are

	// The padding keeps the mutex and the state it guards, written at
	// every decision taken under it, off the cache lines (and their
	// adjacent-line prefetch pairs) of the fields above, which every
	// Record and Withdraw reads from whichever core runs it.
	_ [128]byte

	mu sync.Mutex // serialises everything but Record's striped adds and lease withdrawals
	// The leases as issued, guarded by mu.
	gen      uint32                  // generation of the last lease issued, in its word
	held     uint32                  // bit i set: leases[i] is out (issued, not retired)
	out      int64                   // retries the leases out held when issued
	slot     int64                   // start of the time slot every lease out is for
	issued   [rolling.Stripes]uint32 // retries each lease held when issued; 0 when not out
	leaseAt  [rolling.Stripes]int64  // the instant each was issued at, ns since origin
	rehashAt int64                   // when unshare last changed the stripes, ns since origin
}

// ratioLease is the retries a Ratio may grant without its mutex: those
// its window allows in the time slot [start, end).
//
// It is written by every Withdraw of the goroutines on its stripe. The
// padding gives it two cache lines of its own (the array of them is
// allocated alone: 16 leases fill a 2 KiB size class, whose objects start
// on 2 KiB boundaries), so that a withdrawal on one core takes no line,
// nor adjacent-line prefetch pair, from the goroutines withdrawing from
// other leases on other cores.
type ratioLease struct {
	// word is the lease's generation (high 32 bits) and the retries left
	// in it (low 32 bits). The generation changes with every lease, so a
	// compare-and-swap on a word loaded before the start and end it was
	// checked against fails if another lease has been issued since.
	word       atomic.Uint64
	start, end atomic.Int64 // ns since origin; written only while no retries are left
	// taker is the stack block (rolling.Block) of the goroutine that
	// took the last retry, and turns counts the retries taken by
	// another goroutine than the one before: goroutines that take turns
	// at one lease share its cache line, and Record's stripe.
	taker atomic.Uint64
	turns atomic.Int64
	_     [128 - 40]byte
}

// Ratio.held has a bit per stripe: this fails to compile if there are
// more stripes than bits.
const _ = uint32(1) << (rolling.Stripes - 1)

// maxLease bounds the retries of one lease (the low half of its word).
const maxLease = math.MaxUint32

// NewRatio validates cfg and returns an empty budget. It reads the clock
// once, to fix the window's origin.
func NewRatio(cfg RatioConfig) (*Ratio, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	window := cmp.Or(cfg.Window, DefaultWindow)
	r := &Ratio{
		ratio:  cmp.Or(cfg.Ratio, DefaultRatio),
		now:    cfg.Now,
		w:      rolling.New(window, ratioSlots),
		leases: new([rolling.Stripes]ratioLease),
		// The first collision may be undone at once.
		rehashAt: -minRehash,
	}
	// The first fold spreads what Record counted over the time since
	// the origin, like every later fold over the time since the one before.
	r.w.Reset(0)
	if !cfg.NoFloor {
		r.reserve = cmp.Or(cfg.MinPerSecond, DefaultMinPerSecond) * window.Seconds()
	}
	if r.now != nil {
		r.origin = r.now()
	} else {
		r.origin = time.Now()
	}
	return r, nil
}

// Withdraw reports whether a retry may go ahead now, and counts it if so.
// A Permanent failure is never retried.
func (r *Ratio) Withdraw(c failure.Class) bool {
	if c >= failure.Permanent {
		return false // without reading the clock
	}
	if r.now == nil {
		return r.withdraw(int64(time.Since(r.origin)))
	}
	return r.withdraw(r.since(r.now()))
}

// WithdrawAt is Withdraw at the instant now.
func (r *Ratio) WithdrawAt(now time.Time, c failure.Class) bool {
	if c >= failure.Permanent {
		return false
	}
	return r.withdraw(r.since(now))
}

// withdraw is Withdraw at t ns after the origin, from the calling
// goroutine's stripe.
func (r *Ratio) withdraw(t int64) bool {
	b := rolling.Block()
	return r.withdrawFrom(t, r.w.StripeOf(b), b)
}

// withdrawFrom is withdraw from stripe s by the goroutine of stack block
// b: a retry from its lease when that has one left and t falls in its
// slot, else the decision under the mutex.
func (r *Ratio) withdrawFrom(t int64, s int, b uint64) bool {
	return r.leases[s].take(t, b) || r.withdrawLocked(t, s, b)
}

// take takes a retry from the lease for the goroutine of stack block b,
// if the lease has one left and t falls in its slot.
func (l *ratioLease) take(t int64, b uint64) bool {
	for {
		w := l.word.Load()
		if uint32(w) == 0 || t < l.start.Load() || t >= l.end.Load() {
			return false
		}
		if l.word.CompareAndSwap(w, w-1) {
			if l.taker.Load() != b {
				l.taker.Store(b)
				l.turns.Add(1)
			}
			return true
		}
	}
}

// withdrawLocked is withdrawFrom under the mutex, on the window itself:
// stripe s's lease is handed back first and issued again after. The
// other leases out were issued for the same window and slot; what they
// still hold is counted as taken, which decides the common case without
// touching them. Only when that would refuse are they handed back too,
// and the decision made on the exact counts.
func (r *Ratio) withdrawLocked(t int64, s int, b uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Goroutines of one stripe that found its lease spent at once queue
	// here: all but the first find the lease it issued.
	if r.leases[s].take(t, b) {
		return true
	}
	r.unshare(s, t, r.retire(s))
	requests, retries := r.w.Sums(t)
	shared := r.held != 0 // other stripes are withdrawing too
	if shared {
		// The leases out are all for one slot: a withdrawal in another
		// takes them back first.
		if start, _ := r.w.Span(t); start == r.slot && r.allows(requests, retries+r.out) {
			// Granted whatever the other leases grant meanwhile: the
			// counts, with every retry they hold taken, allow it.
			r.w.AddAt(t, 0, 1)
			r.issue(s, t, share(r.headroom(requests, retries+1+r.out)))
			return true
		}
		r.retireAll()
		requests, retries = r.w.Sums(t)
	}
	if !r.allows(requests, retries) {
		// The requests Record counted since the last fold can only make
		// room: fold them in only when the budget needs them, which
		// spares the common case a walk over every stripe.
		r.w.Fold(t)
		requests, retries = r.w.Sums(t)
	}
	ok := r.allows(requests, retries)
	if ok {
		r.w.AddAt(t, 0, 1)
		retries++
	}
	n := r.headroom(requests, retries)
	if shared {
		n = share(n)
	}
	r.issue(s, t, n)
	return ok
}

// share is the part of n retries that one stripe's lease gets while
// other stripes withdraw too: half, rounded up, so that each goroutine
// comes back for more after a few of its own withdrawals rather than
// taking the others' leases back at every one.
func share(n uint32) uint32 { return n - n/2 }

// retire ends stripe s's lease, if it is out, and counts the retries
// taken from it in the slot it was issued for. It returns their number.
func (r *Ratio) retire(s int) (taken int64) {
	n := r.issued[s]
	if n == 0 {
		return 0 // not out: its word holds no retries
	}
	left := uint32(r.leases[s].word.Swap(uint64(r.gen) << 32))
	if taken = int64(n - left); taken > 0 {
		// No Fold has run since the lease was issued, so leaseAt is
		// still in the slot it was issued for.
		r.w.AddAt(r.leaseAt[s], 0, taken)
	}
	r.issued[s] = 0
	r.held &^= 1 << s
	r.out -= int64(n)
	return taken
}

// minRehash is the least time between two changes of the stripe that
// each goroutine uses (see unshare).
const minRehash = int64(time.Millisecond)

// unshare gives every goroutine another stripe when goroutines took
// turns at stripe s's lease, of which taken retries were just taken: at
// least one retry in four, and four in all, by another goroutine than the
// one before. They share the lease's cache line and Record's stripe,
// which striping is for avoiding; a goroutine alone on a stripe takes no
// turns, and goroutines taking turns on one core take few. Each change
// costs every goroutine a cache miss, so that when collisions cannot all
// be avoided (more goroutines on more cores than stripes) there is at
// most one per minRehash. It changes nothing but which stripe is used:
// every stripe is counted alike.
func (r *Ratio) unshare(s int, t int64, taken int64) {
	turns := r.leases[s].turns.Swap(0)
	if turns >= 4 && 4*turns >= taken && t-r.rehashAt >= minRehash {
		r.rehashAt = t
		r.w.Rehash()
	}
}

// retireAll ends every lease out. Everything that reads or changes the
// window other than withdrawLocked calls it first, under the mutex.
func (r *Ratio) retireAll() {
	for h := r.held; h != 0; h &= h - 1 {
		r.retire(bits.TrailingZeros32(h))
	}
}

// issue leases n retries to stripe s, to be taken anywhere in t's slot.
// Within a slot nothing leaves the window, so until the window changes
// (and the leases are retired first) each of the retries out is one that
// allows would grant after all the others.
func (r *Ratio) issue(s int, t int64, n uint32) {
	if n == 0 {
		return
	}
	start, end := r.w.Span(t)
	r.gen++
	r.issued[s], r.leaseAt[s] = n, t
	r.held |= 1 << s
	r.out += int64(n)
	r.slot = start
	l := &r.leases[s]
	l.start.Store(start)
	l.end.Store(end)
	l.word.Store(uint64(r.gen)<<32 | uint64(n))
}

// allows reports whether one more retry fits beside requests and retries.
func (r *Ratio) allows(requests, retries int64) bool {
	return float64(retries+1) <= r.ratio*float64(requests)+r.reserve
}

// headroom is how many more retries allows grants beside requests and
// retries, one after another, up to maxLease. Above 2^53 it may count a
// few too few (each of them is granted), never one too many.
func (r *Ratio) headroom(requests, retries int64) uint32 {
	x := r.ratio*float64(requests) + r.reserve
	if !r.allows(requests, retries) {
		return 0
	}
	most := int64(1 << 62) // no more retries than that are ever counted
	if x < 1<<62 {
		most = int64(x) // floor(x): x is at least 1 here
	}
	return uint32(min(max(most-retries, 0), maxLease))
}

// Record counts a request when a is a call's first attempt; other attempts
// change nothing. It reads no clock and takes no lock.
func (r *Ratio) Record(a Attempt) {
	if a.N == 1 {
		r.w.Add(1, 0)
	}
}

// RecordAt is Record at the instant now: the request is counted in the
// slot of now exactly, under the lock, rather than spread by the next
// fold.
func (r *Ratio) RecordAt(now time.Time, a Attempt) {
	if a.N != 1 {
		return
	}
	t := r.since(now)
	r.mu.Lock()
	r.retireAll()
	r.w.AddAt(t, 1, 0)
	r.mu.Unlock()
}

// Counts returns the requests and retries counted in the window that ends
// at now (or at the latest instant the budget has seen, if later),
// requests recorded by Record included.
func (r *Ratio) Counts(now time.Time) (requests, retries int64) {
	t := r.since(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retireAll()
	r.w.Fold(t)
	return r.w.Sums(t)
}

// since is the time from the origin to now, in ns; a reading before the
// origin counts as the origin.
func (r *Ratio) since(now time.Time) int64 { return max(int64(now.Sub(r.origin)), 0) }
