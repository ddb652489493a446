package quantile

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Bucket layout. Values are nanoseconds. Below 2^(subBits+1) every value
// has its own bucket; above, each power of two is split into 2^subBits
// buckets of equal width, so a bucket is at most 1/2^subBits of its lower
// bound wide and its midpoint is within 1/2^(subBits+1) (0.78%) of any
// value in it. Values at or above 2^maxBits ns (about 2.4 hours) share the
// last bucket.
const (
	subBits   = 6
	subCount  = 1 << subBits // buckets per power of two
	exactTop  = 2 * subCount // values below this have exact buckets
	maxBits   = 43           // bit length of the largest distinct value
	maxShift  = maxBits - subBits - 1
	nBuckets  = exactTop + maxShift*subCount
	maxWindow = 1 << 30
)

// DefaultWindow is the number of samples after which the older half of
// the estimator is dropped, when Config.Window is zero.
const DefaultWindow = 4096

// ErrInvalidConfig is wrapped by the errors New returns.
var ErrInvalidConfig = errors.New("quantile: invalid config")

// Config configures an [Estimator].
type Config struct {
	// Window is the number of samples per half-window, rounded up to a
	// power of two: after every Window samples the older half is
	// cleared, so quantiles describe the last Window to 2*Window samples.
	// Zero means DefaultWindow (4096). At most 2^30.
	Window int
	// Quantiles are the quantiles (each in (0, 1)) whose values the
	// estimator keeps ready for Tracked, recomputed as samples arrive.
	Quantiles []float64
}

// nMarks is the number of words of a half-window's bitmap of buckets.
const nMarks = (nBuckets + 63) / 64

// hist is one half-window of counts.
type hist [nBuckets]atomic.Uint32

// marks is one half-window's bitmap of the buckets that may hold a count:
// bit i%64 of word i/64 is set for every bucket i whose count is not zero
// (and possibly for some that are), once the Record that made it non-zero
// has returned. Scans and rotations visit the marked
// buckets only: latencies fill a few hundred of the 2,432.
type marks [nMarks]atomic.Uint64

// Estimator estimates latency quantiles over a window of recent samples.
// It is safe for concurrent use. Record is lock-free and allocation-free;
// Quantile scans the buckets (a few microseconds) and Tracked reads values
// recomputed every Window/4 samples (and at every power of two before
// that, so early estimates appear quickly).
//
// Relative error: a returned value is within 0.78% of the exact sample
// quantile of the samples in the window (same rank definition as
// [Exact]), for values from 1 ns to 2.4 hours, while no rotation happens
// concurrently with a query. A sample recorded concurrently with a
// rotation may land in either half.
type Estimator struct {
	hists [2]hist
	marks [2]marks
	_     [64 + (64-2*nMarks*8%64)%64]byte // the next field starts a line

	// Read on every Record or Tracked and written at most once per
	// Window/4 samples, these share one cache line, away from n, the
	// counter every Record increments: a Record touches four lines
	// (these, n, its bucket and the bucket's marks).
	cur         atomic.Uint32  // the half receiving samples
	window      uint64         // power of two
	refreshMask uint64         // refresh when n&refreshMask == 0 (after warm-up)
	tracked     []atomic.Int64 // cached value per quantile, ns
	trackedN    atomic.Uint64  // samples in the window at the last refresh
	_           [8]byte

	n atomic.Uint64 // samples ever recorded
	_ [56]byte

	quantiles []float64
	rotateMu  sync.Mutex
	refreshMu sync.Mutex
}

// New returns an empty Estimator.
func New(cfg Config) (*Estimator, error) {
	w := cfg.Window
	if w == 0 {
		w = DefaultWindow
	}
	if w < 0 || w > maxWindow {
		return nil, fmt.Errorf("%w: Window %d is outside [0, %d]", ErrInvalidConfig, cfg.Window, maxWindow)
	}
	for _, q := range cfg.Quantiles {
		if !(q > 0 && q < 1) {
			return nil, fmt.Errorf("%w: quantile %v is outside (0, 1)", ErrInvalidConfig, q)
		}
	}
	window := uint64(1) << bits.Len64(uint64(w)-1)
	e := &Estimator{
		window:      window,
		refreshMask: max(window/4, 1) - 1,
		quantiles:   append([]float64(nil), cfg.Quantiles...),
		tracked:     make([]atomic.Int64, len(cfg.Quantiles)),
	}
	return e, nil
}

// Window returns the half-window size in samples (a power of two).
func (e *Estimator) Window() int { return int(e.window) }

// bucket returns the bucket index of d.
func bucket(d time.Duration) int {
	if d < exactTop {
		if d < 0 {
			return 0
		}
		return int(d)
	}
	v := uint64(d)
	shift := bits.Len64(v) - subBits - 1 // >= 1 here
	if shift > maxShift {
		return nBuckets - 1
	}
	return exactTop + (shift-1)*subCount + int(v>>uint(shift)) - subCount
}

// value returns the representative value of bucket i: the value itself for
// exact buckets, the midpoint otherwise.
func value(i int) time.Duration {
	if i < exactTop {
		return time.Duration(i)
	}
	j := i - exactTop
	shift := uint(j/subCount + 1)
	lo := uint64(j%subCount+subCount) << shift
	return time.Duration(lo + (uint64(1)<<shift)/2)
}

// Record adds one sample. Negative durations count as zero. It neither
// locks nor allocates, except that one call in Window/4 recomputes the
// tracked quantiles and one in Window clears the older half-window.
func (e *Estimator) Record(d time.Duration) {
	half, b := e.cur.Load()&1, bucket(d)
	if e.hists[half][b].Add(1) == 1 {
		// The bucket's first count since it was cleared marks it, after
		// the add: a rotation, which unmarks before it clears, either
		// clears this count or leaves it marked. Later counts pay
		// nothing for the marks.
		e.marks[half][b/64].Or(1 << (b % 64))
	}
	n := e.n.Add(1)
	// One test for the common case: a rotation (n a multiple of the
	// window) is also a refresh point, and early powers of two lie below
	// refreshMask.
	if n&e.refreshMask != 0 && n > e.refreshMask {
		return
	}
	e.due(n)
}

// due rotates and refreshes as sample n requires.
func (e *Estimator) due(n uint64) {
	if n&(e.window-1) == 0 {
		e.rotate()
	}
	if n&e.refreshMask == 0 || (n&(n-1) == 0 && n < e.refreshMask) {
		e.refresh(false)
	}
}

// rotate clears the older half-window and makes it the current one.
func (e *Estimator) rotate() {
	e.rotateMu.Lock()
	defer e.rotateMu.Unlock()
	old := 1 - e.cur.Load()&1
	h, mk := &e.hists[old], &e.marks[old]
	for k := range mk {
		// Unmark first, then clear what was marked: a count added
		// meanwhile is either cleared or marked again by its Record.
		for m := mk[k].Swap(0); m != 0; m &= m - 1 {
			h[k*64+bits.TrailingZeros64(m)].Store(0)
		}
	}
	e.cur.Store(old)
}

// Refresh recomputes the tracked quantiles now. Record does this by
// itself; Refresh is for tests and for a simulator that wants estimates
// at exact points.
func (e *Estimator) Refresh() { e.refresh(true) }

func (e *Estimator) refresh(wait bool) {
	if len(e.quantiles) == 0 {
		return
	}
	if wait {
		e.refreshMu.Lock()
	} else if !e.refreshMu.TryLock() {
		return // another goroutine is refreshing
	}
	defer e.refreshMu.Unlock()
	total := e.count()
	for i, q := range e.quantiles {
		e.tracked[i].Store(int64(e.at(q, total)))
	}
	e.trackedN.Store(total)
}

// count returns the number of samples in the window. Rotation happens at
// every multiple of the window, so the count follows from the number of
// samples ever recorded: the current half started at the last multiple,
// the older one a window before.
func (e *Estimator) count() uint64 {
	n := e.n.Load()
	if n < e.window {
		return n
	}
	return n - (n/e.window-1)*e.window
}

// at returns the q-quantile of a window holding total samples. If
// concurrent rotation left fewer samples than total, it returns the
// largest value seen.
func (e *Estimator) at(q float64, total uint64) time.Duration {
	if total == 0 {
		return 0
	}
	rank := rankOf(q, total)
	var seen uint64
	last := 0
	for k := range nMarks {
		// Unmarked buckets hold nothing: skip them a word at a time.
		for m := e.marks[0][k].Load() | e.marks[1][k].Load(); m != 0; m &= m - 1 {
			i := k*64 + bits.TrailingZeros64(m)
			c := uint64(e.hists[0][i].Load()) + uint64(e.hists[1][i].Load())
			if c == 0 {
				continue
			}
			seen += c
			last = i
			if seen >= rank {
				return value(last)
			}
		}
	}
	return value(last)
}

// rankOf returns the 1-based rank of the q-quantile among n samples:
// ceil(q*n), at least 1.
func rankOf(q float64, n uint64) uint64 {
	r := uint64(math.Ceil(q * float64(n)))
	return min(max(r, 1), n)
}

// Quantile returns the q-quantile of the samples in the window and how
// many samples that is; with no samples it returns 0, 0. It scans every
// bucket, so it costs a few microseconds: use Tracked on hot paths.
func (e *Estimator) Quantile(q float64) (time.Duration, int) {
	total := e.count()
	return e.at(q, total), int(total)
}

// Tracked returns the value of the i-th quantile of Config.Quantiles as of
// the last refresh, and the number of samples in the window then (zero
// before the first sample). It is two atomic loads.
func (e *Estimator) Tracked(i int) (time.Duration, int) {
	return time.Duration(e.tracked[i].Load()), int(e.trackedN.Load())
}

// Exact returns the q-quantile of sorted by the definition the estimator
// uses: the smallest sample whose 1-based rank is at least ceil(q*n). Tests
// compare estimates with it, and the simulator reports its percentiles
// with it, so both use one definition. sorted must be in ascending order
// and not empty.
func Exact(sorted []time.Duration, q float64) time.Duration {
	return sorted[rankOf(q, uint64(len(sorted)))-1]
}
