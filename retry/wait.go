package retry

import (
	"context"
	"sync"
	"time"
)

// timers holds stopped, drained timers for the waits between attempts: a
// time.Timer costs several allocations, and a retry that waits should pay
// for the wait, not for a new timer.
var timers sync.Pool

// waiter is the timer one call waits on between its attempts: taken from
// the pool at the first wait, reset for every later one, and given back
// by release when the call ends. The zero waiter has no timer.
//
// Inside a synctest bubble a timer belongs to the bubble and must not be
// used outside it (the runtime aborts), and a timer from outside would
// not follow the bubble's clock; so there each wait makes a timer of its
// own and nothing goes to the pool. A bubble's clock has no monotonic
// reading, which tells the two apart (a clock without one elsewhere only
// costs the pool).
type waiter struct {
	t *time.Timer // a timer from the pool, fired and drained; nil if none
}

// wait waits d or until ctx is done, and reports whether the wait ran to
// the end. now is the current time if the caller has read the clock, or
// zero.
func (w *waiter) wait(ctx context.Context, d time.Duration, now time.Time) bool {
	t := w.t
	if t != nil {
		t.Reset(d)
	} else {
		if now.IsZero() {
			now = time.Now()
		}
		if now == now.Round(0) { // no monotonic reading: in a bubble
			return waitOn(ctx, time.NewTimer(d))
		}
		t, _ = timers.Get().(*time.Timer)
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
	}
	if waitOn(ctx, t) {
		w.t = t
		return true
	}
	// Stopped early: under GODEBUG asynctimerchan=1 its channel might
	// still receive a late value, so it is left to the garbage collector.
	w.t = nil
	return false
}

// waitOn waits for t to fire or ctx to end, and reports whether t fired.
// A timer that did not fire is stopped.
func waitOn(ctx context.Context, t *time.Timer) bool {
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// release gives the call's timer back to the pool.
func (w *waiter) release() {
	if w.t != nil {
		timers.Put(w.t)
		w.t = nil
	}
}
