package core

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
// reading, which tells the two apart when the caller has read the clock
// (a clock without one elsewhere only costs the pool); see inBubble for
// when it has not.
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
		if now.IsZero() && inBubble() || !now.IsZero() && now == now.Round(0) {
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

// started is when this package was initialised, with a monotonic
// reading.
var started = time.Now()

// inBubble reports whether the calling goroutine is in a synctest bubble,
// for one monotonic clock read, where time.Now costs two reads. Outside a
// bubble time.Since(started) is measured on the monotonic clock and is
// never negative. Inside one, time.Now is the bubble's clock, which starts
// at midnight UTC, 2000-01-01, and has no monotonic reading, so Since
// compares wall clocks and is negative: the bubble's clock is years
// behind the time this process started. (A test that moved a bubble's
// clock past that time, decades of virtual time, would defeat it.)
func inBubble() bool { return time.Since(started) < 0 }

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
