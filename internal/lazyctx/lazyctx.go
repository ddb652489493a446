// Package lazyctx is a cancellable context whose cancellation costs nothing
// until something watches it: the context of one attempt, for retry's
// per-attempt timeout and hedge's attempts.
//
// Most attempts return before anyone asks for their context's Done
// channel (an in-memory call, a cache hit, a test double), and a context
// from context.WithCancel or context.WithTimeout pays up front for what
// only a watcher needs: a cancelCtx and its cancel func, registration in
// the parent's children (under the parent's lock, and removal again), and
// a timer. A [Context] is one allocation. The first call of Done sets the
// machinery up: a context.WithCancelCause of its own, a timer for its own
// deadline if it has one, and a hook on the parent. Until then, Err
// answers by looking: at its own state, the parent's Err, and the clock
// (only for a context with a deadline of its own, and only while it is
// live).
//
// Value delegates to the inner cancelCtx once there is one, so that
// context.Cause finds the cause, and contexts derived from a Context
// (context.WithCancel, WithTimeout, AfterFunc) register with that inner
// context directly, as they do with a cancelCtx: they call Done first,
// which sets it up. They end with the Context's Err: DeadlineExceeded
// after a deadline, its own or its parent's, as children of a
// context.WithTimeout do. A Context that has ended before anyone watched it sets
// up an inner context already cancelled with its cause the first time
// Done or Value is called, so Cause and every derived context see what a
// context.WithCancelCause would show.
package lazyctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Flags of a Context's state. Only a goroutine holding Context.mu sets
// them; any goroutine may read them.
const (
	// cancelled: the context has ended; Done's channel, if made, is
	// closed, and cause is set.
	cancelled uint32 = 1 << iota
	// deadline: with cancelled, Err is context.DeadlineExceeded (the
	// parent's deadline or the context's own).
	deadline
	// expired: with cancelled and deadline, the context's own deadline
	// ended it.
	expired
	// armed: inner exists; Done and Value go to it.
	armed
	// detached: the context follows neither its parent nor its deadline
	// any more.
	detached
	// follows: a context without a deadline of its own, which cannot be
	// detached: its inner context is a child of the parent itself.
	follows
	// unbounded: the context's own deadline was stopped; it still follows
	// its parent.
	unbounded
)

// A Context is a context.Context that ends when its parent does, when
// [Context.Cancel] is called, or at its own deadline if it has one. Make
// one with [WithCancel] or [WithTimeout]. It is safe for concurrent use.
type Context struct {
	parent context.Context
	expiry time.Time // the context's own deadline; zero for none

	flags atomic.Uint32

	mu sync.Mutex // held to change flags and the fields below
	// cause is the cause of the end once cancelled is set; until then,
	// the cause an end at expiry will have.
	cause error
	// inner is the context's own cancellation, set with armed: a child
	// of parent (follows) or of (*values)(the same Context).
	inner       context.Context
	cancelInner context.CancelCauseFunc
	timer       *time.Timer // ends the context at expiry, once armed
	stopParent  func() bool // unhooks from parent, once armed
	// expire, set while arming an inner context over values, cancels
	// inner with context.DeadlineExceeded and expireCause: what
	// context.WithCancelCause does to a child when its parent, a
	// context that is not a cancelCtx, ends (see values.AfterFunc).
	expire func()
	// expireCause, set by expireLocked, is a context cancelled with the
	// cause, for Cause(values). Atomic: values.Value reads it without
	// c.mu, for any Value call on inner.
	expireCause atomic.Pointer[context.Context]
}

// WithCancel returns a Context that ends when parent does or when Cancel
// is called: context.WithCancelCause's semantics, for one allocation until
// Done is first called. It cannot be detached.
func WithCancel(parent context.Context) *Context {
	c := &Context{parent: parent}
	c.flags.Store(follows)
	return c
}

// WithTimeout returns a Context that ends when parent does, when Cancel is
// called, or once timeout has passed, with cause as its cause (its Err is
// then context.DeadlineExceeded). [Context.Detach] releases it from parent
// and from the timeout. It reads the clock once.
func WithTimeout(parent context.Context, timeout time.Duration, cause error) *Context {
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	return &Context{parent: parent, expiry: time.Now().Add(timeout), cause: cause}
}

// Deadline returns the earlier of the parent's deadline and the context's
// own, as any derived context does; a detached context has none.
func (c *Context) Deadline() (time.Time, bool) {
	f := c.flags.Load()
	if f&detached != 0 {
		return time.Time{}, false
	}
	d, ok := c.parent.Deadline()
	if !c.expiry.IsZero() && f&unbounded == 0 && (!ok || c.expiry.Before(d)) {
		return c.expiry, true
	}
	return d, ok
}

// Done returns a channel closed when the context ends. Its first call
// sets up the context's cancellation (see the package doc).
func (c *Context) Done() <-chan struct{} {
	if c.flags.Load()&armed != 0 {
		return c.inner.Done()
	}
	return c.arm().Done()
}

// Err returns nil while the context is live, context.DeadlineExceeded if
// it ended at a deadline (its own or its parent's), and context.Canceled
// otherwise. An end it finds by looking (the parent's, or the clock past
// the context's own deadline) it makes real first, so Done's channel is
// closed by the time Err reports it.
func (c *Context) Err() error {
	f := c.flags.Load()
	if f&(cancelled|detached) == 0 {
		f = c.poll(f)
	}
	switch {
	case f&cancelled == 0:
		return nil
	case f&deadline != 0:
		return context.DeadlineExceeded
	default:
		return context.Canceled
	}
}

// Value returns the value for key: from the context's own cancellation
// once it is set up, else from the parent. A context that has ended sets
// its cancellation up first, so that context.Cause finds its cause.
func (c *Context) Value(key any) any {
	f := c.flags.Load()
	if f&armed == 0 {
		if f&cancelled == 0 {
			return c.parent.Value(key)
		}
		return c.arm().Value(key)
	}
	return c.inner.Value(key)
}

// Cancel ends the context with cause (context.Canceled if nil), unless it
// has ended already, as a context.CancelCauseFunc does: a parent that has
// ended, or a deadline that has passed, ended it first even if nobody saw
// it yet. Cancelling a context that nobody watches costs no allocation.
func (c *Context) Cancel(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.mu.Lock()
	c.endLocked()
	if c.flags.Load()&cancelled == 0 {
		c.cancelLocked(0, cause)
	}
	c.mu.Unlock()
}

// Detach releases a context made by [WithTimeout] from its parent and its
// deadline, unless it has ended already: from then on it ends only by
// Cancel, and reports no deadline. It stops the timer and unhooks from
// the parent if Done had set them up, and ignores an end of either that
// nobody had seen yet. Detach panics on a context made by WithCancel.
func (c *Context) Detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flags.Load()
	if f&follows != 0 {
		panic("lazyctx: Detach on a context made by WithCancel")
	}
	if f&(cancelled|detached) != 0 {
		return
	}
	c.unhookLocked()
	c.flags.Store(f | detached)
}

// StopDeadline ends the context's own deadline, unless the context has
// ended or been detached: from then on it ends when its parent does or by
// Cancel, and reports its parent's deadline. It stops the timer if Done
// had set one up, and ignores an expiry that nobody had seen yet.
func (c *Context) StopDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flags.Load()
	if f&(cancelled|detached|unbounded) != 0 {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.flags.Store(f | unbounded)
}

// Expired reports whether the context ended at its own deadline (not its
// parent's, and not by Cancel). It reports what Err last found: call Err
// first to look at the clock.
func (c *Context) Expired() bool { return c.flags.Load()&expired != 0 }

// poll looks for an end of a live, attached context not yet recorded in
// flags f: the parent's, the context's own deadline, or a cancellation
// under way on another goroutine (inner closed, flags not yet set). It
// returns the flags after recording any end it found.
func (c *Context) poll(f uint32) uint32 {
	if c.parent.Err() == nil && !c.pastExpiry() && (f&armed == 0 || c.inner.Err() == nil) {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked()
	return c.flags.Load()
}

// pastExpiry reports whether the context has a deadline of its own and
// the clock has reached it.
func (c *Context) pastExpiry() bool {
	return !c.expiry.IsZero() && c.flags.Load()&unbounded == 0 && time.Until(c.expiry) <= 0
}

// end is what the timer and the parent hook run: it records the parent's
// end or the expiry.
func (c *Context) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked()
}

// endLocked records the end of a live, attached context if its parent
// has ended (with the parent's error and cause) or its deadline has
// passed (with the expiry's cause). The caller holds c.mu.
func (c *Context) endLocked() {
	if c.flags.Load()&(cancelled|detached) != 0 {
		return
	}
	if err := c.parent.Err(); err != nil {
		var bits uint32
		if err == context.DeadlineExceeded {
			bits = deadline
		}
		c.cancelLocked(bits, context.Cause(c.parent))
		return
	}
	if c.pastExpiry() {
		c.cancelLocked(deadline|expired, c.cause)
	}
}

// cancelLocked ends a live context with cause, setting bits with
// cancelled: inner's channel closes before the flags say so, so that Err
// never reports an end that Done does not show. The caller holds c.mu.
func (c *Context) cancelLocked(bits uint32, cause error) {
	c.cause = cause
	switch {
	case bits&deadline != 0 && c.expire != nil:
		// A deadline's end: inner and the contexts derived from it end
		// with DeadlineExceeded, as children of a timerCtx would.
		c.expireLocked()
	case c.cancelInner != nil:
		c.cancelInner(cause)
	}
	c.unhookLocked()
	c.flags.Store(c.flags.Load() | cancelled | bits)
}

// unhookLocked stops the timer and the parent hook, if armed. The caller
// holds c.mu.
func (c *Context) unhookLocked() {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stopParent != nil {
		c.stopParent()
	}
}

// arm sets up the context's cancellation, if not done yet, and returns
// its inner context. A context that has ended gets an inner context
// cancelled with its cause, over the parent's values alone. A live one
// that follows its parent gets a child of the parent; any other gets a
// context over the parent's values, ended by a hook on the parent and a
// timer for its deadline (unless detached).
func (c *Context) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flags.Load()
	if f&armed != 0 {
		return c.inner
	}
	if f&(cancelled|follows) == follows {
		c.inner, c.cancelInner = context.WithCancelCause(c.parent)
	} else {
		c.inner, c.cancelInner = context.WithCancelCause((*values)(c))
	}
	if f&cancelled != 0 {
		// Closed before armed is set, so that no Done reports it open.
		if f&deadline != 0 && c.expire != nil {
			c.expireLocked()
		} else {
			c.cancelInner(c.cause)
		}
	}
	c.flags.Store(f | armed)
	if f&(cancelled|follows|detached) != 0 {
		// Ended, a child of its parent (follows), or live until Cancel
		// (detached).
		return c.inner
	}
	var left time.Duration // until the expiry, if any: one clock read
	if !c.expiry.IsZero() && f&unbounded == 0 {
		if left = time.Until(c.expiry); left <= 0 {
			c.endLocked()
			return c.inner
		}
	}
	if c.parent.Err() != nil {
		c.endLocked()
		return c.inner
	}
	end := c.end // one func value for both
	if c.parent.Done() != nil {
		c.stopParent = context.AfterFunc(c.parent, end)
	}
	// A parent that ends at or before the expiry ends the context first,
	// through the hook: the context needs no timer of its own.
	if d, ok := c.parent.Deadline(); left > 0 && (!ok || c.expiry.Before(d)) {
		c.timer = time.AfterFunc(left, end)
	}
	return c.inner
}

// expireLocked ends inner at a deadline: with context.DeadlineExceeded
// as its Err and that of every context derived from it, and c.cause as
// their cause. The caller holds c.mu and has set c.cause.
func (c *Context) expireLocked() {
	cc, cancel := context.WithCancelCause(context.Background())
	cancel(c.cause)
	c.expireCause.Store(&cc)
	f := c.expire
	c.expire = nil
	f()
}

// values is the parent of a Context's inner context when that must not
// follow the Context's parent: the parent's values, without its
// cancellation or deadline. It lets the Context end inner with
// context.DeadlineExceeded, which a cancel func cannot do: as it is not
// a cancelCtx but has a Done channel and an AfterFunc method,
// context.WithCancelCause hands it the func that ends the child with
// values' Err and context.Cause (see Context.expireLocked). Its Done
// channel never closes: nothing but inner's setup looks at it.
type values Context

// never is values' Done channel.
var never = make(chan struct{})

func (v *values) Deadline() (time.Time, bool) { return time.Time{}, false }
func (v *values) Done() <-chan struct{}       { return never }

// Err is DeadlineExceeded once expireLocked has run; the caller of
// expireLocked holds v.mu.
func (v *values) Err() error {
	if v.expireCause.Load() != nil {
		return context.DeadlineExceeded
	}
	return nil
}

// Value returns the parent's value for key, except the one key that
// context.Cause looks up, which after expireLocked finds a context
// cancelled with the cause: of the keys it could be asked for, only
// that one has a value in a context.WithCancelCause of Background.
func (v *values) Value(key any) any {
	if cc := v.expireCause.Load(); cc != nil {
		if x := (*cc).Value(key); x != nil {
			return x
		}
	}
	return v.parent.Value(key)
}

// AfterFunc keeps f, which context.WithCancelCause passes while arm
// builds inner (under v.mu), for expireLocked. The stop func it returns
// (run when inner is cancelled otherwise) has nothing to do: f runs at
// most once, from expireLocked, and never once inner is cancelled, as the
// Context has then ended. A func without state costs no allocation.
func (v *values) AfterFunc(f func()) (stop func() bool) {
	v.expire = f
	return stopNothing
}

func stopNothing() bool { return false }
