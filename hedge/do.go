package hedge

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/internal/lazyctx"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// Do runs fn as a hedged call and returns the first successful result.
//
// The primary (attempt 0) runs on the caller's goroutine. If it has not
// answered after the hedge delay and the Hedger admits a hedge, fn runs
// again as attempt 1 on a timer's goroutine, and so on up to MaxHedges
// extra attempts, one delay apart; fn uses its attempt number to pick a
// different replica. The first attempt to succeed settles the call: the
// others' contexts are cancelled with cause [ErrLost] (the caller's cause
// when the caller gave up), and any of them
// that still succeeds hands its result to cleanup (if not nil) instead,
// so that, say, an HTTP body gets closed. cleanup runs on the goroutine of
// the attempt that produced the result.
//
// Errors: a fatal error (every error unless Config.NonFatal says
// otherwise) also settles the call at once, and Do returns it unchanged,
// so an outer retry loop classifies it as it would an unhedged call. A
// non-fatal error starts the next hedge at once, if one is left and
// admitted; when every attempt has failed, Do returns the last error to
// arrive. If the caller's context ends, every attempt's context ends with
// it and no error counts as non-fatal any more: the first attempt to fail
// settles the call with its own error (usually ctx.Err()), and if Do is
// waiting on hedges alone it returns context.Cause(ctx) at once. An
// error can steer the hedges to come: one that carries [WithPushback]
// delays the next hedge or stops them all, and one marked by [MarkFatal]
// settles the call whatever Config.NonFatal says.
//
// Lifetimes: Do returns only once the attempts it runs on the caller's
// goroutine have returned (the primary, and any attempt that a non-fatal
// primary error starts at once), so fn must honour cancellation for a
// winning hedge to cut the call short (network clients do). Do cancels
// the winning attempt's context too, with cause context.Canceled, as it
// returns, so that no context outlives the call: read what you need from
// the result (a response body, say) inside fn. Losing hedges may still be
// running when Do returns; they end when fn returns, which their
// cancelled context asks for.
//
// Cost: when the primary answers before the delay, Do starts no
// goroutine, allocates only the primary's cancellable context (one
// allocation, and three more only if fn reads its Done channel), and arms
// and stops one timer, reused across calls (BenchmarkHedgePrimaryWins and
// BenchmarkHedgePrimaryWinsWatched).
// A request that may not hedge (see [Hedger.Begin]) runs fn(ctx, 0)
// directly.
func Do[T any](ctx context.Context, h *Hedger, fn func(ctx context.Context, attempt int) (T, error), cleanup func(T)) (T, error) {
	return do(ctx, h, h.policy, true, fn, cleanup, false)
}

// DoFirstSuccess hedges like [Do] but waits for the first success: a
// failure settles the call only when no other attempt is running. With
// Config.NonFatal nil, an attempt that fails while another is still
// running drops its error and the call waits for the others, and the
// hedges not yet started still start on time. The first success settles
// the call at once; if every attempt fails, the last failure is handled
// as Do handles any failure (it settles the call with its error), so the
// error returned is the last failure's. With Config.NonFatal set,
// DoFirstSuccess follows Do's rule, which NonFatal then states in full:
// a fatal error settles the call at once and cancels the others (gRPC's
// hedging, proposal A6), a non-fatal one starts the next hedge at once.
// An error marked by MarkFatal settles the call at once either way, and
// one that carries WithPushback delays or stops the hedges to come
// either way. Once the caller's context has ended, failures no longer
// wait. An attempt counts as running from the moment Do starts it, so a
// failure cannot settle the call while a hedge it has just started is
// about to run.
//
// Use it when a failure may be local to one replica (a fast 503 from an
// overloaded server, a refused connection) and must not cancel a request
// to another replica that may yet succeed. fn must then judge each
// attempt's outcome itself, returning an error for any it would not hand
// back, and release whatever a dropped error holds (a response body, say)
// once DoFirstSuccess returns: only the returned error reaches the
// caller. Its cost is Do's.
func DoFirstSuccess[T any](ctx context.Context, h *Hedger, fn func(ctx context.Context, attempt int) (T, error), cleanup func(T)) (T, error) {
	return do(ctx, h, h.policy, true, fn, cleanup, true)
}

// DoAttempt hedges one attempt of a call of p, as DoFirstSuccess hedges
// a call: the one engine keeps the books. The primary is the attempt
// itself, which p's call admits and records; every hedge is a copy of it
// (engine.AdmitRequest with isCopy true), which p's guards admit and p's
// budget pays for, and which both hear of when it ends. A hedge that a
// guard rejects or the budget refuses is not sent, and no more are.
// Config.Budget plays no part. Call it inside an attempt of p, with the
// attempt's context, as package unherdhttp's Transport and unherdgrpc's
// client do:
//
//	a := engine.StartAttempt(ctx, p)
//	v, err := hedge.DoAttempt(a.Context(), h, p, fn, cleanup)
//	err = a.End(err)
func DoAttempt[T any](ctx context.Context, h *Hedger, p *retry.Policy, fn func(ctx context.Context, attempt int) (T, error), cleanup func(T)) (T, error) {
	return do(ctx, h, p, false, fn, cleanup, true)
}

// do is Do, DoFirstSuccess if failuresWait is set, and DoAttempt if own
// is not: with own, the primary is a request of p of its own (Do's
// policy, h.policy), admitted and recorded here.
func do[T any](ctx context.Context, h *Hedger, p *retry.Policy, own bool, fn func(ctx context.Context, attempt int) (T, error), cleanup func(T), failuresWait bool) (T, error) {
	// The clock is read for the latency and the default budget only, and
	// then as a monotonic reading alone: time.Since(epoch) costs one
	// clock read where time.Now costs two (wall and monotonic).
	var start time.Duration
	if h.est != nil {
		start = time.Since(epoch)
	}
	var primary engine.Request
	if own {
		var err error
		if primary, err = engine.AdmitRequest(ctx, p, false); err != nil {
			var zero T
			return zero, err
		}
	}
	delay, hedge := h.Begin()
	if !hedge {
		v, err := fn(ctx, 0)
		h.ended(start, err, false, false)
		endRequest(&primary, ctx, err)
		return v, err
	}

	c := getCall[T](h)
	c.parent, c.fn, c.cleanup, c.delay, c.start = ctx, fn, cleanup, delay, start
	c.policy = p
	c.failuresWait = failuresWait
	actx := lazyctx.WithCancel(ctx)
	c.attempts = append(c.attempts, actx)
	c.started, c.running = 1, 1
	c.arm()

	v, err := fn(actx, 0)
	// Stop the timer only if it has not fired: once it has, it is armed
	// for the next hedge (see startNext), which must still start if the
	// call stays open.
	if !c.fired.Load() {
		stopped := c.timer.Stop()
		if stopped && !c.fired.Load() && (err == nil || !c.open(err)) {
			// The timer never fired, so no other goroutine has seen c:
			// the primary settles the call alone, and c goes back to the
			// pool.
			actx.Cancel(nil)
			h.ended(start, err, false, false)
			endRequest(&primary, ctx, err)
			c.reset()
			h.calls.Put(c)
			return v, err
		}
		if stopped && c.fired.Load() {
			// The timer fired between the two loads, started a hedge an
			// instant ago and was re-armed for the next one, which this
			// Stop cancelled: re-arm it.
			c.rearm()
		}
	}
	// The primary is recorded with the call's outcome (Do,
	// DoFirstSuccess) or by the retry loop whose attempt it is
	// (DoAttempt), so that each call counts once as a first attempt
	// however the race went.
	v, err = c.finish(v, err)
	endRequest(&primary, ctx, err)
	return v, err
}

// epoch is the origin of the monotonic clock readings Do takes.
var epoch = time.Now()

// ended reports a call that started at start (since epoch) and ended
// with err to the Hedger: Observe for a success, and Result for a success
// of a call that started a hedge (hedgeWon: a hedge answered first). The
// clock is read once, and only to measure the latency.
func (h *Hedger) ended(start time.Duration, err error, hedged, hedgeWon bool) {
	if err == nil && h.est != nil {
		h.Observe(time.Since(epoch) - start)
	}
	if err == nil && hedged {
		h.Result(hedgeWon)
	}
}

// endRequest reports how request r, sent under parent, ended with err.
// A failure after parent ended is recorded only if a retry attempt
// timeout ended it, and then as a timeout: the dependency was too slow;
// otherwise the caller gave up, or another request won, which says
// nothing about the dependency, and r is abandoned.
func endRequest(r *engine.Request, parent context.Context, err error) {
	if err != nil && parent.Err() != nil {
		if context.Cause(parent) != retry.ErrAttemptTimeout {
			r.Abandon()
			return
		}
		err = engine.MarkAttemptTimeout(err)
	}
	r.End(err)
}

// call is the shared state of one hedged call.
type call[T any] struct {
	h       *Hedger
	parent  context.Context
	fn      func(context.Context, int) (T, error)
	cleanup func(T)
	delay   time.Duration
	start   time.Duration // since epoch
	timer   *time.Timer   // runs c.fire; reused while c is pooled
	fired   atomic.Bool   // the timer fired since c left the pool

	failuresWait bool          // DoFirstSuccess: a failure waits while others run
	policy       *retry.Policy // whose guards admit and whose budget pays for the hedges

	mu       sync.Mutex
	started  int  // attempts started, the primary included
	running  int  // attempts started and not yet delivered
	closed   bool // the budget refused a hedge, or a pushback said stop: start no more
	pending  bool // a pushback armed the timer: the next hedge is still to come
	settled  bool
	winner   int // attempt that settled the call, -1 if none did
	v        T
	err      error
	lastErr  error              // the last failure delivered, for a call a pending hedge kept open
	attempts []*lazyctx.Context // the attempts' contexts, by attempt
	requests []engine.Request   // the hedges' requests: attempt i's is requests[i-1]
	done     chan struct{}      // closed on settling; made with the first hedge
}

// getCall returns a pooled call for T, or a new one. A Hedger used with
// several result types keeps only the last one's calls.
func getCall[T any](h *Hedger) *call[T] {
	if c, ok := h.calls.Get().(*call[T]); ok {
		return c
	}
	c := &call[T]{h: h, attempts: make([]*lazyctx.Context, 0, 1+h.maxHedges), requests: make([]engine.Request, 0, h.maxHedges)}
	// The timer exists before anything arms it, so that the arming Reset
	// orders every field written before it before fire reads them.
	c.timer = time.AfterFunc(math.MaxInt64, c.fire)
	return c
}

// arm starts the hedge timer for the next hedge.
func (c *call[T]) arm() { c.timer.Reset(c.delay) }

// rearm arms the timer again for the next hedge if the call may still
// start one.
func (c *call[T]) rearm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.settled && !c.closed && c.started <= c.h.maxHedges {
		c.arm()
	}
}

// reset clears c for the pool (only when its timer never fired).
func (c *call[T]) reset() {
	var zero T
	clear(c.attempts)
	clear(c.requests)
	c.parent, c.fn, c.cleanup, c.v, c.err, c.lastErr = nil, nil, nil, zero, nil, nil
	c.policy = nil
	c.attempts, c.requests = c.attempts[:0], c.requests[:0]
	c.started, c.running, c.closed, c.settled, c.winner, c.done = 0, 0, false, false, 0, nil
	c.pending = false
	c.failuresWait = false
}

// open reports whether err leaves the call open (it is non-fatal, not
// marked by MarkFatal, and the caller is still waiting).
func (c *call[T]) open(err error) bool {
	return c.h.isNonFatal(err) && c.parent.Err() == nil && !isFatal(err)
}

// dropped reports whether DoFirstSuccess drops err, a failure while
// another attempt runs: only without Config.NonFatal, and never a
// failure marked by MarkFatal.
func (c *call[T]) dropped(err error) bool {
	return c.failuresWait && c.h.nonFatal == nil && c.running > 0 && c.parent.Err() == nil && !isFatal(err)
}

// pushback applies a pushback that err carries, with c.mu held: a
// negative one starts no more hedges; another arms the timer for the
// next hedge that long from now, and keeps the call open until it
// starts. It reports whether the next hedge now waits for the timer.
func (c *call[T]) pushback(err error) (waits bool) {
	d, ok := pushbackOf(err)
	if !ok || c.parent.Err() != nil {
		return false
	}
	if d < 0 {
		c.closed, c.pending = true, false
		c.timer.Stop()
		return false
	}
	if c.closed || c.started > c.h.maxHedges {
		return false
	}
	c.pending = true
	if c.done == nil {
		c.done = make(chan struct{})
	}
	c.timer.Reset(d)
	return true
}

// fire runs on the timer's goroutine when a delay passes with no answer:
// it starts the next hedge and runs it there.
func (c *call[T]) fire() {
	c.fired.Store(true)
	if ctx, i, ok := c.startNext(); ok {
		c.observeStart(i)
		c.run(ctx, i)
		return
	}
	// A pushback kept the call open for this hedge, which did not start
	// (the budget refused it): with nothing running, the last failure
	// settles the call.
	c.mu.Lock()
	if c.pending && !c.settled && c.running == 0 {
		var zero T
		c.settle(-1, zero, c.lastErr)
		return
	}
	c.pending = false
	c.mu.Unlock()
}

// run runs attempt i and whatever attempts its non-fatal failures start at
// once, on the calling goroutine.
func (c *call[T]) run(ctx context.Context, i int) {
	for {
		v, err := c.fn(ctx, i)
		var ok bool
		if ctx, i, ok = c.deliver(i, v, err); !ok {
			return
		}
	}
}

// startNext asks the Hedger to admit the next hedge and, if it may start,
// registers it and arms the timer for the one after. The budget is asked
// outside the lock.
func (c *call[T]) startNext() (context.Context, int, bool) {
	c.mu.Lock()
	open := !c.settled && !c.closed && c.started <= c.h.maxHedges
	c.mu.Unlock()
	if !open {
		return nil, 0, false
	}
	req, err := engine.AdmitRequest(c.parent, c.policy, true)
	admitted := err == nil
	if !admitted && c.h.observer != nil {
		c.h.observer.Observe(c.parent, observe.Event{Kind: observe.HedgeDenied, Attempt: c.started})
	}
	c.mu.Lock()
	if !admitted {
		c.closed = true
		if c.pending && !c.settled && c.running == 0 {
			// The hedge a pushback kept the call open for will not
			// start: with nothing running, the last failure settles it.
			var zero T
			c.settle(-1, zero, c.lastErr)
			return nil, 0, false
		}
		c.pending = false
		c.mu.Unlock()
		return nil, 0, false
	}
	if c.settled || c.closed || c.started > c.h.maxHedges {
		// Lost a race with another start, the end or a pushback that
		// stopped the hedges: the hedge paid for will not run, so its
		// cost goes back (outside the lock).
		c.mu.Unlock()
		req.Cancel()
		return nil, 0, false
	}
	defer c.mu.Unlock()
	c.pending = false
	i := c.started
	c.started++
	c.running++
	ctx := lazyctx.WithCancel(c.parent)
	c.attempts = append(c.attempts, ctx)
	c.requests = append(c.requests, req)
	if c.done == nil {
		c.done = make(chan struct{})
	}
	if c.started <= c.h.maxHedges {
		c.timer.Reset(c.delay)
	}
	return ctx, i, true
}

// deliver hands in attempt i's outcome. A success or a fatal error
// settles the call; a non-fatal error starts the next attempt at once,
// which deliver returns for the calling goroutine to run, or fails the
// call if nothing else is left running. With failuresWait, an error while
// another attempt is running is dropped instead. A result that arrives
// after the call settled goes to cleanup.
func (c *call[T]) deliver(i int, v T, err error) (context.Context, int, bool) {
	c.mu.Lock()
	c.running--
	// The request is recorded once deliver has decided, outside the
	// lock. A success counts even after the call settled; a failure after
	// another request won (its cancellation, mostly) says nothing about
	// the dependency, and one after the caller gave up counts only if
	// the attempt's timeout ended it (endRequest), whichever of the
	// request and the caller's wait saw the end first.
	var req engine.Request
	if i > 0 {
		req = c.requests[i-1] // the primary's is do's to record
	}
	lost := c.settled
	defer func() {
		switch {
		case i == 0:
			// The primary: do records it with the call's outcome.
		case err == nil:
			req.End(nil)
		case lost && c.parent.Err() == nil:
			req.Abandon() // another request won
		default:
			endRequest(&req, c.parent, err)
		}
	}()
	if lost {
		c.mu.Unlock()
		if err == nil && c.cleanup != nil {
			c.cleanup(v)
		}
		return nil, 0, false
	}
	var waits bool
	if err != nil {
		c.lastErr = err
		waits = c.pushback(err)
	}
	if err != nil && c.dropped(err) {
		c.mu.Unlock()
		return nil, 0, false
	}
	if err == nil || !c.open(err) {
		c.settle(i, v, err)
		return nil, 0, false
	}
	if waits {
		// A pushback set when the next hedge starts; the timer starts
		// it, or fire settles the call if it may not.
		c.mu.Unlock()
		return nil, 0, false
	}
	c.mu.Unlock()
	if ctx, j, ok := c.startNext(); ok {
		c.observeStart(j)
		return ctx, j, true
	}
	c.mu.Lock()
	if !c.settled && c.running == 0 && !c.pending {
		var zero T
		c.settle(-1, zero, err)
		return nil, 0, false
	}
	c.mu.Unlock()
	return nil, 0, false
}

// settle ends the call with attempt i's outcome (i = -1: no attempt's).
// It is called with c.mu held and releases it. Then, outside the lock, it
// stops the timer, cancels every other attempt with ErrLost, and reports
// the outcome to the Hedger (see Hedger.ended).
func (c *call[T]) settle(i int, v T, err error) {
	c.settled, c.winner, c.v, c.err = true, i, v, err
	hedged := c.started > 1
	if c.done != nil {
		close(c.done)
	}
	c.mu.Unlock()
	// No attempt starts after settling, so c.attempts is stable now.
	c.timer.Stop()
	// A call settled because the caller gave up keeps the caller's cause
	// for every attempt: the parent's cancellation may still be on its way
	// to the other attempts' contexts, and must not lose that race to
	// ErrLost.
	lost := ErrLost
	if c.parent.Err() != nil {
		lost = context.Cause(c.parent)
	}
	for j, a := range c.attempts {
		if j != i {
			a.Cancel(lost)
		}
	}
	c.h.ended(c.start, err, hedged, i > 0)
	if o := c.h.observer; o != nil && hedged {
		k := observe.HedgeLost
		if i > 0 {
			k = observe.HedgeWon
		}
		o.Observe(c.parent, observe.Event{Kind: k, Attempt: c.started - 1})
	}
}

// observeStart reports hedge i's start to the observer, if any. It is
// called outside the lock; c.delay does not change during a call.
func (c *call[T]) observeStart(i int) {
	if o := c.h.observer; o != nil {
		o.Observe(c.parent, observe.Event{Kind: observe.HedgeStarted, Attempt: i, Delay: c.delay})
	}
}

// finish is the caller's side of a call whose timer fired or whose
// primary failed with a non-fatal error: it hands in the primary's
// outcome, runs any attempt that starts at once, then waits for the call
// to settle or the caller to give up.
func (c *call[T]) finish(v T, err error) (T, error) {
	ctx, i, more := c.deliver(0, v, err)
	for more {
		v, err = c.fn(ctx, i)
		ctx, i, more = c.deliver(i, v, err)
	}
	c.mu.Lock()
	if !c.settled {
		done := c.done // not nil: a hedge is running
		c.mu.Unlock()
		select {
		case <-done:
		case <-c.parent.Done():
			c.mu.Lock()
			if !c.settled {
				var zero T
				c.settle(-1, zero, context.Cause(c.parent))
			} else {
				c.mu.Unlock()
			}
		}
		c.mu.Lock()
	}
	v, err, w := c.v, c.err, c.winner
	c.mu.Unlock()
	if w >= 0 {
		c.attempts[w].Cancel(nil)
	}
	return v, err
}
