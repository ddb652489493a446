// Package rolling counts two quantities over a rolling time window without
// reading the clock on the hot path.
//
// A circuit breaker needs calls and failures over the last ten seconds; a
// client-side throttle needs requests and accepts over the last two
// minutes; a ratio retry budget needs requests and retries over the last
// ten seconds. It is the one sliding-window mechanism of the module. Each
// sees its common event (a success, a request) far more often than the
// rare one, and a clock read costs as much as the rest of the bookkeeping.
// So a [Window] takes common events through [Window.Add]: one atomic add
// on one of several padded stripes, no clock, no lock. The owner folds
// the stripes into time buckets when it reads the clock anyway (on a
// failure, a retry, or while it is throttling), with [Window.Fold].
//
// Folding cannot know when the striped events happened, only that they
// happened since the previous fold. It spreads them uniformly over that
// interval, bucket by bucket, and drops the share that falls before the
// window. For a steady stream this is exact in expectation; for a burst it
// errs by at most the gap between two folds.
//
// Everything except Add must be serialised by the owner (it holds its own
// mutex around Fold, AddAt, Sums and Reset).
package rolling

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// Stripes is the number of counter stripes: enough that goroutines on
// different cores rarely share one (see Window.Stripe). An owner that keeps
// per-goroutine state of its own (a lease of retries, say) can stripe it
// the same way, so that a goroutine finds its share on a cache line that
// stays with its core.
const Stripes = 1 << stripeBits

const stripeBits = 4

// stripe holds the striped counts. The padding gives every stripe two
// cache lines of its own: with adjacent-line prefetch, stripes that shared
// a 128-byte pair would still bounce between cores.
type stripe struct {
	a, b atomic.Int64
	_    [128 - 16]byte
}

type bucket struct {
	idx  int64 // which width-long interval of time this slot holds
	a, b int64
}

// Window counts two quantities, a and b, over a rolling window split into
// buckets. The zero Window is not usable; call New.
type Window struct {
	stripes [Stripes]stripe

	// salt changes which stripe each goroutine adds to (see Rehash). It
	// is read by every Add and written rarely, so it shares its cache
	// lines only with fields that are read-only after New: the padding
	// after them keeps them off the line every Fold writes.
	salt    atomic.Uint32
	buckets []bucket
	width   int64 // bucket width, ns
	_       [128]byte

	last    int64 // time of the last fold, ns
	started bool
}

// New returns a window of length d split into n buckets (n >= 1, d >= n ns).
func New(d time.Duration, n int) *Window {
	n = max(n, 1)
	w := &Window{buckets: make([]bucket, n), width: max(int64(d)/int64(n), 1)}
	for i := range w.buckets {
		w.buckets[i].idx = -1 << 62
	}
	return w
}

// Len is the window's length in nanoseconds.
func (w *Window) Len() int64 { return w.width * int64(len(w.buckets)) }

// Add counts da and db, with no clock and no lock. The counts reach the
// buckets at the next Fold. Safe for concurrent use with everything.
func (w *Window) Add(da, db int64) {
	s := &w.stripes[w.Stripe()]
	if da != 0 {
		s.a.Add(da)
	}
	if db != 0 {
		s.b.Add(db)
	}
}

// Fold moves the striped counts into the buckets, spread uniformly over
// the time since the previous fold, at time now (ns on the owner's clock;
// a time before the previous fold counts as the previous fold's time).
func (w *Window) Fold(now int64) {
	now = w.advance(now)
	var ca, cb int64
	for i := range w.stripes {
		ca += take(&w.stripes[i].a)
		cb += take(&w.stripes[i].b)
	}
	if ca != 0 || cb != 0 {
		w.spread(w.last, now, ca, cb)
	}
	w.last = now
}

// take moves a stripe's count out. A plain load first skips the locked
// instruction for stripes that are zero, which most are between folds.
func take(c *atomic.Int64) int64 {
	v := c.Load()
	if v != 0 {
		c.Add(-v) // counts added since the load stay for the next fold
	}
	return v
}

// Stripe picks the calling goroutine's stripe from the address of its
// stack, hashed with the window's salt: each goroutine keeps adding to the
// same stripe, whose cache line then stays with the core running it. The
// address is taken in 2 KiB blocks, the smallest goroutine stack: every
// stack is a whole number of blocks, so no two goroutines share one, and
// goroutines share a stripe only by the hash, which Rehash undoes. It is
// only a hint (a stack moves when it grows, and a deep one spans several
// blocks); any stripe is correct.
func (w *Window) Stripe() int { return w.StripeOf(Block()) }

// StripeOf is the stripe of stack block b.
func (w *Window) StripeOf(b uint64) int {
	return int((b ^ uint64(w.salt.Load())) * 0x9e3779b97f4a7c15 >> (64 - stripeBits)) // Fibonacci hashing
}

// Block is the 2 KiB block of the calling goroutine's stack that its
// caller's frame is in: an identity of the goroutine, as long as its stack
// does not move.
//
//go:nosplit
func Block() uint64 {
	var x byte
	return uint64(uintptr(unsafe.Pointer(&x))) >> 11
}

// Rehash gives every goroutine another stripe, at random: the owner calls
// it when it finds goroutines sharing one (two that did part with
// probability 15/16). Each call costs every goroutine that adds a cache
// miss, so the owner should call it rarely. Safe for concurrent use.
func (w *Window) Rehash() { w.salt.Add(1) }

// maxTime bounds the times a window works with (about 146 years from the
// owner's epoch), so that no bucket boundary computation overflows.
const maxTime = 1 << 62

// advance makes time monotonic for the window and keeps it in range.
func (w *Window) advance(now int64) int64 {
	now = min(max(now, -maxTime), maxTime)
	if !w.started {
		w.started, w.last = true, now
	}
	return max(now, w.last)
}

// AddAt counts da and db in the bucket of time now. Call Fold(now) first
// so the striped counts land before it.
func (w *Window) AddAt(now, da, db int64) {
	now = w.advance(now)
	b := w.slot(w.index(now))
	b.a += da
	b.b += db
}

// Sums returns the totals of a and b over the window ending at now,
// leaving out striped counts not yet folded. Negative totals (undone
// counts that outlived their originals) are reported as zero.
func (w *Window) Sums(now int64) (a, b int64) {
	now = min(max(now, w.last), maxTime)
	cur := w.index(now)
	lo := cur - int64(len(w.buckets)) + 1
	for i := range w.buckets {
		if bk := &w.buckets[i]; bk.idx >= lo && bk.idx <= cur {
			a += bk.a
			b += bk.b
		}
	}
	return max(a, 0), max(b, 0)
}

// Span returns the bounds [start, end) of the bucket that Sums(now) ends
// in and that AddAt(now) adds to. Until the next Fold, Sums and AddAt at
// any time in that span read and write that bucket and the same window.
func (w *Window) Span(now int64) (start, end int64) {
	now = min(max(now, w.last), maxTime)
	start = w.index(now) * w.width
	return start, start + w.width
}

// Reset empties the window: buckets and stripes. Counts striped
// concurrently with Reset may survive it.
func (w *Window) Reset(now int64) {
	for i := range w.buckets {
		w.buckets[i] = bucket{idx: -1 << 62}
	}
	for i := range w.stripes {
		w.stripes[i].a.Store(0)
		w.stripes[i].b.Store(0)
	}
	w.started, w.last = true, min(max(now, -maxTime), maxTime)
}

// index is the bucket number of time t (floor division).
func (w *Window) index(t int64) int64 {
	q := t / w.width
	if t%w.width < 0 {
		q--
	}
	return q
}

// slot returns the bucket for index i, clearing it if it held an older
// interval.
func (w *Window) slot(i int64) *bucket {
	k := i % int64(len(w.buckets))
	if k < 0 {
		k += int64(len(w.buckets))
	}
	b := &w.buckets[k]
	if b.idx != i {
		*b = bucket{idx: i}
	}
	return b
}

// spread adds ca and cb over [t0, t1], each bucket getting the share of
// the interval it covers, rounded to the nearest count; shares before the
// window ending at t1 are dropped. Cumulative rounding keeps the total
// exact.
func (w *Window) spread(t0, t1, ca, cb int64) {
	if t1 <= t0 {
		b := w.slot(w.index(t1))
		b.a += ca
		b.b += cb
		return
	}
	cur := w.index(t1)
	start := max(t0, (cur-int64(len(w.buckets))+1)*w.width)
	span := float64(t1 - t0)
	share := func(c, x int64) int64 {
		if x >= t1 {
			return c
		}
		return int64(math.Round(float64(c) * (float64(x-t0) / span)))
	}
	pa, pb := share(ca, start), share(cb, start)
	for k := w.index(start); k <= cur; k++ {
		hi := min(t1, (k+1)*w.width)
		na, nb := share(ca, hi), share(cb, hi)
		b := w.slot(k)
		b.a += na - pa
		b.b += nb - pb
		pa, pb = na, nb
	}
}
