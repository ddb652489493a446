package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/observe"
)

// ErrInvalidConfig is wrapped by every error New and the algorithms'
// constructors and Validate methods return.
var ErrInvalidConfig = errors.New("limit: invalid config")

// Config configures a [Limiter]. The zero value is an adaptive limit with
// [Gradient]'s defaults, a queue of up to DefaultMaxWait, and a reserve
// for [Critical] requests.
type Config struct {
	// Algorithm decides the limit from the samples the limiter's tokens
	// report. Nil means a [Gradient] with the zero [GradientConfig].
	// An algorithm keeps state: give each Limiter its own.
	Algorithm Algorithm

	// CriticalShare is the share of the limit kept for [Critical]
	// requests: Normal requests are admitted only while fewer than
	// limit - reserve are in flight, Sheddable ones while fewer than
	// limit - 2*reserve, where reserve is CriticalShare*limit rounded up,
	// but at most (limit-1)/2, so that every priority can always have at
	// least one request in flight (with a limit of 1 or 2 there is no
	// reserve). The reserve is kept from the first Critical request on:
	// until then Normal requests may fill the limit and Sheddable ones
	// all but one reserve, so a server that never marks a request
	// Critical loses no capacity to it. Zero means DefaultCriticalShare
	// (0.1); a negative value means no reserve at all: every priority may
	// fill the limit. It must be at most 0.5.
	CriticalShare float64

	// MaxWait is the longest [Limiter.Wait] waits in the limiter's queue
	// for a slot another request releases; once the queue is congested,
	// a waiter that is not Critical gives up after CongestedWait instead.
	// Zero means DefaultMaxWait (100 ms); a negative MaxWait means no
	// queue: Wait refuses at once when no slot is free.
	MaxWait time.Duration

	// MaxWaiters bounds the queue's length: Wait refuses at once when
	// that many are already waiting. Zero means the current limit, so
	// that at most twice the limit's requests are held at once.
	MaxWaiters int

	// CongestedWait is how long a waiter waits once the queue is
	// congested (it has not been empty at any moment in the last
	// CongestionInterval): CoDel's target. Zero means
	// DefaultCongestedWait (5 ms).
	CongestedWait time.Duration

	// CongestionInterval is how long the queue must have stayed
	// non-empty to count as congested: CoDel's interval. Zero means
	// DefaultCongestionInterval (100 ms).
	CongestionInterval time.Duration

	// Observer, if not nil, receives an observe.LimitChanged event when
	// a release moves the limit, an observe.LimitRefused event for every
	// refusal (AcquirePriority's false, Wait's ErrLimited or *WaitError)
	// and an observe.LimitWaited event when a request leaves the wait
	// queue, with or without a slot. It is called synchronously, outside
	// the limiter's locks, with Wait's context, or context.Background()
	// for AcquirePriority and releases. Nil means none: each event site
	// then costs one nil check.
	Observer observe.Observer
}

// Defaults of the Config fields whose zero value means a default.
const (
	// DefaultCriticalShare keeps a tenth of the limit for Critical
	// requests, so a limit of 20 admits 18 Normal and 16 Sheddable ones:
	// enough for health checks and the few requests a user waits on,
	// while Sheddable work, kept below twice the reserve, still has 80%
	// of the limit.
	DefaultCriticalShare = 0.1
	// DefaultCongestedWait is CoDel's target, and the queue timeout of
	// Facebook's controlled delay ("Fail at Scale").
	DefaultCongestedWait = 5 * time.Millisecond
	// DefaultCongestionInterval is CoDel's interval, and the one Facebook
	// uses to call a queue congested.
	DefaultCongestionInterval = 100 * time.Millisecond
	// DefaultMaxWait is the longest a request waits in the queue: CoDel's
	// interval, past which a queue that has not emptied is congested
	// anyway. With no queue at all, a slot freed a moment after a
	// Critical request was refused goes to whoever comes next, and
	// Critical requests are refused in proportion to their share of the
	// load.
	DefaultMaxWait = 100 * time.Millisecond
)

// Limiter admits at most Limit() requests at once and, through its
// [Algorithm], moves that limit with the latency and drops its requests
// report. The time is an argument of every method that needs one, so the
// same code runs on the real clock and in a simulation.
//
// Its methods and a token's release are safe for concurrent use. Acquire
// and AcquirePriority are lock-free; a released sample takes a short
// mutex to update the algorithm, except with [Fixed], whose limit never
// moves, and a release takes the queue's mutex only while requests wait
// (see Wait). Neither allocates.
type Limiter struct {
	inFlight atomic.Int64
	limit    atomic.Int64
	fixed    bool // the algorithm is Fixed: releases skip the update

	mu  sync.Mutex
	alg Algorithm

	share      float64 // CriticalShare, 0 for none
	maxWait    time.Duration
	maxWaiters int
	target     time.Duration
	interval   time.Duration

	critical atomic.Bool  // a Critical request came: keep its reserve
	waiters  atomic.Int64 // queued waiters, and those about to queue
	q        queue

	obs observe.Observer
}

// New returns a Limiter that starts at the algorithm's initial limit.
func New(cfg Config) (*Limiter, error) {
	alg := cfg.Algorithm
	if alg == nil {
		g, err := NewGradient(GradientConfig{})
		if err != nil {
			return nil, err
		}
		alg = g
	}
	n := alg.Limit()
	if n < 1 {
		return nil, fmt.Errorf("%w: the algorithm's initial limit %d is below 1", ErrInvalidConfig, n)
	}
	if err := checkQueueConfig(&cfg); err != nil {
		return nil, err
	}
	l := &Limiter{
		alg:        alg,
		share:      cfg.CriticalShare,
		maxWait:    cfg.MaxWait,
		maxWaiters: cfg.MaxWaiters,
		target:     cfg.CongestedWait,
		interval:   cfg.CongestionInterval,
		obs:        cfg.Observer,
	}
	_, l.fixed = alg.(Fixed)
	l.limit.Store(int64(n))
	return l, nil
}

// Acquire is AcquirePriority(now, Normal).
func (l *Limiter) Acquire(now time.Time) (Token, bool) {
	return l.AcquirePriority(now, Normal)
}

// AcquirePriority admits a request of priority p started at now if fewer
// requests are in flight than p may have (the limit for Critical, less
// the critical reserve for Normal, less twice the reserve for
// Sheddable; see Config.CriticalShare), and returns its token; otherwise
// it returns false at once, and the caller should refuse the request
// (503, RESOURCE_EXHAUSTED). An admitted request must be released
// exactly once, with its token's Served, Dropped or Ignore. It never
// waits: see Wait for that.
func (l *Limiter) AcquirePriority(now time.Time, p Priority) (Token, bool) {
	tok, ok := l.admit(now, p)
	if !ok && l.obs != nil {
		l.refused(context.Background(), p, 0, ErrLimited)
	}
	return tok, ok
}

// Limit returns the current limit: how many requests may be in flight at
// once. It is at least 1.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns how many admitted requests have not been released yet.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

// threshold is how many requests may be in flight for a request of
// priority p to be admitted, under the limit lim, with the critical
// reserve of share*lim in force if critical is true and half in force
// (between Normal and Sheddable only) if not.
func threshold(p Priority, lim int64, share float64, critical bool) int64 {
	if p == Critical || share <= 0 {
		return lim
	}
	// Rounded up; the small subtraction keeps 0.1*30, which is
	// 3.0000000000000004 in floating point, from rounding up to 4.
	r := min(int64(math.Ceil(share*float64(lim)-1e-9)), (lim-1)/2)
	n := lim - r
	if !critical {
		n = lim
	}
	if p != Normal {
		n -= r
	}
	return n
}

// admit is AcquirePriority's compare-and-swap loop.
func (l *Limiter) admit(now time.Time, p Priority) (Token, bool) {
	if p == Critical && !l.critical.Load() {
		l.critical.Store(true)
	}
	for {
		n := l.inFlight.Load()
		if n >= threshold(p, l.limit.Load(), l.share, l.critical.Load()) {
			return Token{}, false
		}
		if l.inFlight.CompareAndSwap(n, n+1) {
			return Token{l: l, start: now, inFlight: int(n + 1)}, true
		}
	}
}

// release ends a request and, unless ignore, feeds its sample to the
// algorithm; then it gives the request's slot to a waiter, if one may
// take it, or frees it.
func (l *Limiter) release(t Token, now time.Time, dropped, ignore bool) {
	if !ignore && !l.fixed {
		s := Sample{RTT: now.Sub(t.start), InFlight: t.inFlight, Dropped: dropped, Now: now}
		l.mu.Lock()
		n := int64(max(l.alg.Update(s), 1))
		changed := l.limit.Swap(n) != n
		l.mu.Unlock()
		if changed && l.obs != nil {
			// Reported once the slot is released, outside the lock.
			defer l.limitChanged(int(n))
		}
	}
	if l.waiters.Load() > 0 {
		l.handOver(true)
		return
	}
	l.inFlight.Add(-1)
	// A waiter that queued while this slot was being freed may have
	// missed it: it counted itself in waiters before it tried to
	// acquire, so either it saw the slot or this load sees it.
	if l.waiters.Load() > 0 {
		l.handOver(false)
	}
}

// Token is an admitted request: a small value, not a pointer, so
// acquiring one allocates nothing. Release it exactly once, with Served,
// Dropped or Ignore; releasing it twice makes the limiter's in-flight
// count wrong. The zero Token (from a refused Acquire) may be released:
// it does nothing.
type Token struct {
	l        *Limiter
	start    time.Time
	inFlight int
}

// Served releases a request that was served: now minus the acquire time
// is a latency sample for the algorithm.
func (t Token) Served(now time.Time) {
	if t.l != nil {
		t.l.release(t, now, false, false)
	}
}

// Dropped releases a request that was dropped or timed out: a sign of
// overload, which the algorithm answers by lowering the limit.
func (t Token) Dropped(now time.Time) {
	if t.l != nil {
		t.l.release(t, now, true, false)
	}
}

// Ignore releases a request whose end says nothing about the load (the
// client cancelled, the request failed before doing its work): the
// in-flight count falls and the algorithm sees no sample.
func (t Token) Ignore() {
	if t.l != nil {
		t.l.release(t, time.Time{}, false, true)
	}
}
