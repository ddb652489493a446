package throttle

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/pause"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry/engine"
)

// ErrRateLimited is the rejection of [RateLimiter] when waiting for a
// send token would end after the caller's deadline: the call is not made
// and the wait is not started. It is a local rejection made with
// engine.NewRejection: errors.Is matches it to retry.ErrRejected, and the
// retry loop never retries it.
var ErrRateLimited = engine.NewRejection("throttle: send rate limit wait would pass the deadline")

// RateLimiterSettings configures a [RateLimiter]. The zero value follows
// the AWS SDKs' adaptive retry mode; the algorithm's constants are fixed
// (see CubicScale and the others).
type RateLimiterSettings struct {
	// IsThrottle decides whether an outcome is a throttling response. Nil
	// means an error classified Throttled (HTTP 429, gRPC
	// RESOURCE_EXHAUSTED, anything judged Throttled by
	// retry.Judge, with or without a server delay).
	IsThrottle func(admission.Outcome) bool

	// Now is the clock. Nil means time.Now. It is read on every Admit once
	// the limiter is enabled, and on every Done.
	Now func() time.Time

	// Observer, if set, receives an observe.Event for every attempt the
	// limiter delays (RateDelayed) or rejects (RateRejected), with the
	// context given to Admit, and for every throttling response that
	// cuts the fill rate (RateCut), with the context given to Done,
	// which the retry loop calls with the call's context
	// (context.Background through DoneAt). Each is called outside the
	// lock. Nil means none, at no cost.
	Observer observe.Observer
}

// RateLimiter is the client-side rate limiter of the AWS SDKs' "adaptive"
// retry mode: a token bucket, one token per attempt, whose fill rate
// follows CUBIC. A throttling response cuts the rate to 0.7 times what the
// client was sending; successes let it grow back along a cubic curve,
// never above twice the measured send rate and never below 0.5 tokens per
// second. The bucket does nothing until the first throttling response, so
// a client that is never throttled is never delayed.
//
// Unlike the other guards it delays calls instead of failing them: Admit
// waits for a token, honouring ctx, and rejects only if the wait would end
// after ctx's deadline (ErrRateLimited) or ctx ends during it (the
// context's cause). Nothing enables it by default; add it to
// retry.Config.Guards.
//
// It implements admission.Guard. The zero RateLimiter is not usable; call
// NewRateLimiter. A RateLimiter is safe for concurrent use. Every Done
// takes its lock and reads the clock: it costs more than Adaptive, in
// exchange for pacing.
type RateLimiter struct {
	enabled    atomic.Bool // mirrors l.enabled, read without the lock
	mu         sync.Mutex
	l          limiter
	isThrottle func(admission.Outcome) bool
	clock      func() time.Time
	epoch      time.Time
	observer   observe.Observer
}

var _ admission.Guard = (*RateLimiter)(nil)

// NewRateLimiter returns a RateLimiter built from s. It returns an error
// only for symmetry with the other constructors; every Settings is valid.
func NewRateLimiter(s RateLimiterSettings) (*RateLimiter, error) {
	r := &RateLimiter{isThrottle: s.IsThrottle, clock: s.Now, observer: s.Observer}
	if r.isThrottle == nil {
		r.isThrottle = defaultIsThrottle
	}
	if r.clock == nil {
		r.clock = time.Now
	}
	r.epoch = r.clock()
	r.l = newLimiter(0)
	return r, nil
}

func defaultIsThrottle(o admission.Outcome) bool { return o.Err != nil && o.Class == failure.Throttled }

// Admit takes a send token, implementing admission.Guard, waiting for one if
// the bucket is empty. Before the first throttling response it returns at
// once: no lock, no clock read. The ticket is always 0.
func (r *RateLimiter) Admit(ctx context.Context) (ticket uint64, err error) {
	if !r.enabled.Load() {
		return 0, nil
	}
	now := r.clock()
	r.mu.Lock()
	wait := time.Duration(r.l.acquire(r.seconds(now)) * float64(time.Second))
	rate := r.l.fillRate
	if deadline, ok := ctx.Deadline(); ok && wait > 0 && now.Add(wait).After(deadline) {
		r.l.release()
		r.mu.Unlock()
		if r.observer != nil {
			r.observer.Observe(ctx, observe.Event{Kind: observe.RateRejected, Delay: wait, Rate: rate})
		}
		return 0, ErrRateLimited
	}
	r.mu.Unlock()
	if wait <= 0 {
		return 0, nil
	}
	if r.observer != nil {
		r.observer.Observe(ctx, observe.Event{Kind: observe.RateDelayed, Delay: wait, Rate: rate})
	}
	if !pause.For(ctx, wait) {
		r.mu.Lock()
		r.l.release()
		r.mu.Unlock()
		return 0, context.Cause(ctx)
	}
	return 0, nil
}

// ReserveAt takes a send token at an explicit time without waiting, and
// returns how long the caller must wait before sending (zero if a token
// was available, or while the limiter is not enabled). It is the
// non-blocking core of Admit, for simulations that run their own clock.
// A wait is reported to the observer as RateDelayed, with
// context.Background.
func (r *RateLimiter) ReserveAt(now time.Time) (wait time.Duration) {
	if !r.enabled.Load() {
		return 0
	}
	r.mu.Lock()
	wait = time.Duration(r.l.acquire(r.seconds(now)) * float64(time.Second))
	rate := r.l.fillRate
	r.mu.Unlock()
	if wait > 0 && r.observer != nil {
		r.observer.Observe(context.Background(), observe.Event{Kind: observe.RateDelayed, Delay: wait, Rate: rate})
	}
	return wait
}

// Done reports how an admitted attempt ended, implementing
// admission.Guard: a throttling response lowers the fill rate, anything
// else lets it grow, and a cut of the rate reaches the observer with ctx,
// the call's context. Abandoned attempts are not counted.
func (r *RateLimiter) Done(ctx context.Context, ticket uint64, o admission.Outcome) {
	if o.Abandoned {
		return
	}
	r.doneAt(ctx, r.clock(), o)
}

// DoneAt is Done at an explicit time instead of the clock's.
func (r *RateLimiter) DoneAt(now time.Time, ticket uint64, o admission.Outcome) {
	r.doneAt(context.Background(), now, o)
}

// doneAt is DoneAt for a call with context ctx.
func (r *RateLimiter) doneAt(ctx context.Context, now time.Time, o admission.Outcome) {
	if o.Abandoned {
		return
	}
	throttled := r.isThrottle(o)
	r.mu.Lock()
	r.l.update(r.seconds(now), throttled)
	if r.l.enabled && !r.enabled.Load() {
		r.enabled.Store(true)
	}
	rate := r.l.fillRate
	r.mu.Unlock()
	if throttled && r.observer != nil {
		if ctx == nil {
			ctx = context.Background()
		}
		r.observer.Observe(ctx, observe.Event{Kind: observe.RateCut, Rate: rate})
	}
}

// FillRate returns the current token fill rate in tokens per second, and
// whether the limiter is enabled (it is from the first throttling response
// on; before that it admits everything at once).
func (r *RateLimiter) FillRate() (rate float64, enabled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.l.fillRate, r.l.enabled
}

// MeasuredRate returns the smoothed send rate, in requests per second.
func (r *RateLimiter) MeasuredRate() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.l.measuredTxRate
}

func (r *RateLimiter) seconds(t time.Time) float64 { return t.Sub(r.epoch).Seconds() }
