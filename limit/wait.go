package limit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/unherd/unherd/internal/linked"
	"github.com/unherd/unherd/retry/engine"
)

// ErrLimited is the refusal of a request over the concurrency limit:
// Wait returns it, or a [*WaitError] that matches it, when no slot is
// free. A server answers it with 503 and Retry-After, or gRPC
// RESOURCE_EXHAUSTED, and lets the client back off; it is a local
// rejection for package retry (errors.Is(ErrLimited, retry.ErrRejected)),
// which never retries it.
var ErrLimited = engine.NewRejection("limit: over the concurrency limit")

// WaitError is Wait's refusal after it waited in the queue and no slot
// came. It matches ErrLimited.
type WaitError struct {
	// Waited is how long the request waited.
	Waited time.Duration
	// Congested is true when the queue was congested, so the request
	// gave up after Config.CongestedWait rather than Config.MaxWait.
	Congested bool
	// Evicted is true when a request of higher priority took its place
	// in the full queue.
	Evicted bool
}

// Error says how long the request waited and whether the queue was
// congested.
func (e *WaitError) Error() string {
	if e.Evicted {
		return fmt.Sprintf("%v after waiting %v: a request of higher priority took its place in the queue", ErrLimited, e.Waited)
	}
	if e.Congested {
		return fmt.Sprintf("%v after waiting %v in a congested queue", ErrLimited, e.Waited)
	}
	return fmt.Sprintf("%v after waiting %v", ErrLimited, e.Waited)
}

// Unwrap returns ErrLimited.
func (e *WaitError) Unwrap() error { return ErrLimited }

// checkQueueConfig checks the priority and queue fields of cfg and puts
// their defaults in.
func checkQueueConfig(cfg *Config) error {
	switch s := cfg.CriticalShare; {
	case math.IsNaN(s) || s > 0.5:
		return fmt.Errorf("%w: CriticalShare %v is above 0.5", ErrInvalidConfig, s)
	case s == 0:
		cfg.CriticalShare = DefaultCriticalShare
	case s < 0:
		cfg.CriticalShare = 0
	}
	for _, f := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"MaxWait", &cfg.MaxWait, DefaultMaxWait},
		{"CongestedWait", &cfg.CongestedWait, DefaultCongestedWait},
		{"CongestionInterval", &cfg.CongestionInterval, DefaultCongestionInterval},
	} {
		if *f.d < 0 && f.d != &cfg.MaxWait {
			return fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, f.name, *f.d)
		}
		if *f.d == 0 {
			*f.d = f.def
		}
	}
	if cfg.MaxWaiters < 0 {
		return fmt.Errorf("%w: MaxWaiters %d is negative", ErrInvalidConfig, cfg.MaxWaiters)
	}
	return nil
}

// Wait admits a request of priority p as AcquirePriority does, and
// when no slot is free waits in the limiter's queue for one that another
// request releases, for at most Config.MaxWait (negative: not at all). It
// returns the request's token, to be released as Acquire's are, or:
//
//   - ctx's cause if ctx ends first, at once: the caller has gone, and
//     its request must not be served. Such a waiter leaves the queue and
//     never holds a slot.
//   - ErrLimited if there is no queue or the queue is full
//     (Config.MaxWaiters).
//   - a [*WaitError], which matches ErrLimited, if it waited and no slot
//     came.
//
// The queue follows Facebook's "Fail at Scale": a controlled delay, after
// CoDel, and an adaptive LIFO. Once the queue has not been empty at any
// moment in the last Config.CongestionInterval, it is congested: a
// waiter gives up after Config.CongestedWait rather than MaxWait, and a
// released slot goes to the newest waiter, which has the most time left
// before its caller gives up, rather than the oldest. Across priorities a
// released slot goes to the highest priority first, Critical, then
// Normal, then Sheddable, each only while its share of the limit has
// room.
//
// Wait is a shell on the real clock: it reads time.Now, and the queue
// waits on timers, so the tokens it returns are started at time.Now. When
// a slot is free it takes no lock and allocates nothing, like
// AcquirePriority; waiting allocates a little and takes the queue's
// mutex, as do releases while someone waits, which hand their slot
// directly to a waiter.
func (l *Limiter) Wait(ctx context.Context, p Priority) (Token, error) {
	if ctx.Err() != nil {
		return Token{}, context.Cause(ctx)
	}
	now := Now()
	if tok, ok := l.admit(now, p); ok {
		return tok, nil
	}
	if l.maxWait <= 0 {
		if l.obs != nil {
			l.refused(ctx, p, 0, ErrLimited)
		}
		return Token{}, ErrLimited
	}
	return l.wait(ctx, p, now)
}

// wait is Wait's slow path: it queues.
func (l *Limiter) wait(ctx context.Context, p Priority, start time.Time) (Token, error) {
	w := &waiter{p: p, ready: make(chan struct{})}
	l.q.mu.Lock()
	// Counted before the last try, so that a release that frees a slot
	// after this try sees a waiter and hands the slot over.
	l.waiters.Add(1)
	if tok, ok := l.admit(start, p); ok {
		l.waiters.Add(-1)
		l.q.mu.Unlock()
		return tok, nil
	}
	maxN := l.maxWaiters
	if maxN == 0 {
		maxN = int(l.limit.Load())
	}
	if l.q.n >= maxN && !l.q.evict(p.rank()) {
		l.waiters.Add(-1)
		l.q.mu.Unlock()
		if l.obs != nil {
			l.refused(ctx, p, 0, ErrLimited)
		}
		return Token{}, ErrLimited
	}
	if l.q.n == 0 {
		l.q.lastEmpty = start
	}
	giveUp := start.Add(l.maxWait)
	if p != Critical {
		// Critical waiters are not held to the congested queue's short
		// wait: the slots released go to them first, and they are the
		// work the server keeps serving under overload.
		giveUp = giveUpAt(start, l.q.lastEmpty, l.maxWait, l.target, l.interval)
	}
	l.q.push(w)
	l.q.mu.Unlock()

	timer := time.NewTimer(giveUp.Sub(start))
	defer timer.Stop()
	select {
	case <-w.ready:
		if w.evicted {
			// A request of higher priority took this one's place in the
			// full queue.
			l.waiters.Add(-1)
			err := &WaitError{Waited: time.Since(start), Evicted: true}
			if l.obs != nil {
				l.waited(ctx, p, err.Waited, err)
				l.refused(ctx, p, err.Waited, err)
			}
			return Token{}, err
		}
		if ctx.Err() == nil {
			if l.obs != nil {
				l.waited(ctx, p, w.tok.start.Sub(start), nil)
			}
			return w.tok, nil
		}
	case <-ctx.Done():
	case <-timer.C:
	}
	l.q.mu.Lock()
	if w.granted {
		// A slot came as the wait ended.
		l.q.mu.Unlock()
		if ctx.Err() != nil {
			w.tok.Ignore() // to the next waiter: this caller has gone
			if l.obs != nil {
				l.waited(ctx, p, w.tok.start.Sub(start), context.Cause(ctx))
			}
			return Token{}, context.Cause(ctx)
		}
		if l.obs != nil {
			l.waited(ctx, p, w.tok.start.Sub(start), nil)
		}
		return w.tok, nil
	}
	evicted := w.evicted // taken out of the queue as the wait ended
	if !evicted {
		l.q.remove(w)
	}
	l.waiters.Add(-1)
	l.q.mu.Unlock()
	if ctx.Err() != nil {
		if l.obs != nil {
			l.waited(ctx, p, time.Since(start), context.Cause(ctx))
		}
		return Token{}, context.Cause(ctx)
	}
	err := &WaitError{Waited: time.Since(start), Congested: !evicted && giveUp.Before(start.Add(l.maxWait)), Evicted: evicted}
	if l.obs != nil {
		l.waited(ctx, p, err.Waited, err)
		l.refused(ctx, p, err.Waited, err)
	}
	return Token{}, err
}

// giveUpAt is when a waiter that queued at start gives up, the queue
// having been empty last at lastEmpty: after maxWait, or, once the queue
// is congested (it has not been empty since interval ago, which, while
// the waiter is in it, is from lastEmpty+interval on), after target.
func giveUpAt(start, lastEmpty time.Time, maxWait, target, interval time.Duration) time.Time {
	end := start.Add(maxWait)
	codel := start.Add(target)
	if c := lastEmpty.Add(interval); c.After(codel) {
		codel = c
	}
	if codel.Before(end) {
		return codel
	}
	return end
}

// congested reports whether a queue that is not empty now, and was empty
// last at lastEmpty, is congested: serve it last in, first out.
func congested(now, lastEmpty time.Time, interval time.Duration) bool {
	return now.Sub(lastEmpty) >= interval
}

// handOver gives released or free slots to waiters, highest priority
// first, each while its priority has room; own is true when the caller
// holds a slot it is releasing, which the first waiter takes over (the
// in-flight count stays) or which is freed if no waiter may take it.
func (l *Limiter) handOver(own bool) {
	now := Now()
	l.q.mu.Lock()
	lifo := l.q.n > 0 && congested(now, l.q.lastEmpty, l.interval)
	lim := l.limit.Load()
	for r := 0; r < len(l.q.lists) && l.q.n > 0; {
		head := l.q.lists[r].Head()
		if head == nil {
			r++
			continue
		}
		thr := threshold(head.p, lim, l.share, l.critical.Load())
		n := l.inFlight.Load()
		if own {
			if n-1 >= thr {
				break // lower priorities have less room still
			}
			own = false
		} else {
			if n >= thr {
				break
			}
			if !l.inFlight.CompareAndSwap(n, n+1) {
				continue
			}
			n++
		}
		w := l.q.pop(r, lifo)
		l.waiters.Add(-1)
		w.tok = Token{l: l, start: now, inFlight: int(n)}
		w.granted = true
		close(w.ready)
	}
	if own {
		l.inFlight.Add(-1)
	}
	l.q.mu.Unlock()
}

// queue is the limiter's waiters, a doubly linked list per priority rank,
// under its mutex.
type queue struct {
	mu        sync.Mutex
	lists     [3]linked.List[waiter, *waiter]
	n         int       // waiters in the lists
	lastEmpty time.Time // when the lists were last all empty
}

// waiter is one Wait in the queue. Its fields are guarded by the queue's
// mutex until ready is closed, after which tok is read-only.
type waiter struct {
	linked.Links[waiter] // on its priority rank's list

	p       Priority
	ready   chan struct{} // closed when granted or evicted
	granted bool
	evicted bool
	tok     Token
}

func (q *queue) push(w *waiter) {
	q.lists[w.p.rank()].Push(w)
	q.n++
}

// pop takes the newest waiter of rank r if lifo, else the oldest.
func (q *queue) pop(r int, lifo bool) *waiter {
	w := q.lists[r].Head()
	if lifo {
		w = q.lists[r].Tail()
	}
	q.remove(w)
	return w
}

// evict makes room in the full queue for a waiter of rank r: it takes
// out the newest waiter of the lowest rank below r (the one that has
// waited least, of the work the server would shed first) and tells it so,
// and reports whether there was one.
func (q *queue) evict(r int) bool {
	for low := len(q.lists) - 1; low > r; low-- {
		if w := q.lists[low].Tail(); w != nil {
			q.remove(w)
			w.evicted = true
			close(w.ready)
			return true
		}
	}
	return false
}

func (q *queue) remove(w *waiter) {
	q.lists[w.p.rank()].Remove(w)
	q.n--
}
