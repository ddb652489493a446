package throttle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry/engine"

	"github.com/unherd/unherd/internal/draws"
	"github.com/unherd/unherd/internal/rolling"
)

// Defaults applied to zero fields of [AdaptiveSettings]. K is the Google
// SRE book's (chapter 21 "Handling Overload", section "Client-Side
// Throttling"); the window is this package's: the book's two minutes
// react to a full outage only after one minute (until then the healthy
// minute's accepts outweigh the failures) and, with local rejections
// counted, take minutes to recover (see the package doc).
const (
	DefaultK             = 2.0
	DefaultWindow        = 10 * time.Second
	DefaultWindowBuckets = 20 // 500 ms each
)

// ErrThrottled is the local rejection of [Adaptive]: the call was not made
// because the dependency has been accepting too few requests. It is made
// with engine.NewRejection, so errors.Is matches it to retry.ErrRejected
// and the retry loop never retries it, whether the throttle is one of its
// Guards or the operation returns the rejection itself.
var ErrThrottled = engine.NewRejection("throttle: rejected locally, dependency overloaded")

// ErrInvalidSettings is wrapped by every error the constructors and
// Validate methods return.
var ErrInvalidSettings = errors.New("throttle: invalid settings")

// AdaptiveSettings configures an [Adaptive] throttle. The zero value is
// K = 2 over a 10 s window, local rejections not counted as requests:
// quick to shed when the dependency fails and quick to recover. The SRE
// book's original is AdaptiveSettings{Window: 2 * time.Minute,
// CountRejections: true}.
type AdaptiveSettings struct {
	// K is the multiplier on accepts: calls are rejected locally with
	// probability max(0, (requests - K*accepts) / (requests + 1)), so the
	// client starts shedding once fewer than 1/K of its requests are
	// accepted. Lower is more aggressive. Zero means DefaultK (2); it must
	// be at least 1.
	K float64

	// Window is the rolling window over which requests and accepts are
	// counted, split into WindowBuckets buckets that expire one at a
	// time. Zero means DefaultWindow (10 s) and DefaultWindowBuckets
	// (20).
	Window        time.Duration
	WindowBuckets int

	// CountRejections counts a local rejection as a request, as the SRE
	// book does. Then, after a long outage, the window is full of the
	// client's own rejections, the few calls it still admits are the only
	// source of accepts, and the probability falls only as fast as the
	// window forgets the outage: about Window/2 * ln(requests in the
	// window), minutes for the book's window. False, the default, counts
	// the calls the dependency saw, so the rejection probability rests on
	// what the dependency did, and the first successes after an outage
	// bring it down within a few seconds. Both shed the same share under
	// overload (the dependency sees at most about K times what it
	// accepts); in a full outage, without counting them, the client still
	// lets through about sqrt(rate/Window) calls per second (a 100/s
	// client, about 3 per second): the probes that see the recovery.
	CountRejections bool

	// Accepted decides whether the dependency accepted an attempt. Nil
	// means DefaultAccepted. Abandoned attempts never reach it: they count
	// as neither a request nor an accept.
	Accepted func(admission.Outcome) bool

	// Now is the clock. Nil means time.Now. It is read only while
	// rejecting and after attempts that were not accepted.
	Now func() time.Time

	// Observer, if set, receives an observe.Event (Throttled) for every
	// call Admit rejects, with that call's context and the rejection
	// probability, outside the lock. Nil means none, at no cost.
	Observer observe.Observer

	// Rand supplies the draws for local rejections. Nil means
	// math/rand/v2's global source. Draws happen under the throttle's
	// lock, so a seeded source that is not safe for concurrent use is
	// fine.
	Rand rand.Source
}

// DefaultAccepted is the classifier used when AdaptiveSettings.Accepted is
// nil. A success is accepted, and so is a Permanent error: the dependency
// took the request and answered it (not found, invalid argument).
// Throttled errors (the dependency asked for less traffic) and Timeouts
// (it did not answer in time) are not. Transient errors are not accepted
// either: in retry's classification they are 502s, 503s without pushback,
// refused and reset connections, all answers of a dependency that could
// not take the request. A caller whose transient errors are processed
// requests (a 500 from a handler bug) can count them as accepted with a
// custom classifier.
func DefaultAccepted(o admission.Outcome) bool {
	return o.Err == nil || o.Class == failure.Permanent
}

// Validate reports settings that cannot work, naming the field.
func (s *AdaptiveSettings) Validate() error {
	switch {
	case s.K != 0 && !(s.K >= 1): // also rejects NaN
		return fmt.Errorf("%w: K %v is below 1; use 0 for the default of %v", ErrInvalidSettings, s.K, DefaultK)
	case s.Window < 0:
		return fmt.Errorf("%w: Window %v is negative; use 0 for the default of %v", ErrInvalidSettings, s.Window, DefaultWindow)
	case s.WindowBuckets < 0 || s.WindowBuckets > 1000:
		return fmt.Errorf("%w: WindowBuckets %d is outside [0, 1000]", ErrInvalidSettings, s.WindowBuckets)
	}
	if window, buckets := s.window(); window < time.Duration(buckets) {
		return fmt.Errorf("%w: Window %v is shorter than %d ns (one per bucket)", ErrInvalidSettings, window, buckets)
	}
	return nil
}

// window returns the rolling window's length and bucket count, defaults
// applied.
func (s *AdaptiveSettings) window() (time.Duration, int) {
	return cmp.Or(s.Window, DefaultWindow), cmp.Or(s.WindowBuckets, DefaultWindowBuckets)
}

// Adaptive is the client-side adaptive throttle of the Google SRE book: it
// counts the requests it sends and the ones the dependency accepted over a
// rolling window, and rejects calls locally with probability
// max(0, (requests - K*accepts) / (requests + 1)). As long as the
// dependency keeps refusing, the rejection rate keeps rising; once it
// accepts again, the rate falls. Local rejections count as requests only
// with AdaptiveSettings.CountRejections.
//
// It implements admission.Guard. The zero Adaptive is not usable; call
// NewAdaptive. An Adaptive is safe for concurrent use.
type Adaptive struct {
	// threshold is the rejection probability scaled to 2^53; zero (the
	// healthy case) means "admit without a draw, a lock or a clock read".
	threshold atomic.Uint64
	_         [64]byte // the lock's writes stay off the line read per call

	mu       sync.Mutex
	win      *rolling.Window // a = requests, b = accepts
	k        float64
	accepted func(admission.Outcome) bool
	countRej bool
	clock    func() time.Time
	rand     func() uint64
	epoch    time.Time
	observer observe.Observer
}

// NewAdaptive validates s and returns an Adaptive built from it.
func NewAdaptive(s AdaptiveSettings) (*Adaptive, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	a := &Adaptive{
		win:      rolling.New(s.window()),
		k:        cmp.Or(s.K, DefaultK),
		accepted: s.Accepted,
		countRej: s.CountRejections,
		clock:    s.Now,
		rand:     draws.From(s.Rand),
		observer: s.Observer,
	}
	if a.accepted == nil {
		a.accepted = DefaultAccepted
	}
	if a.clock == nil {
		a.clock = time.Now
	}
	a.epoch = a.clock()
	a.win.Reset(0)
	return a, nil
}

// Admit asks to make a call, implementing admission.Guard; it returns
// ErrThrottled to reject it locally. While the rejection probability is
// zero it is one atomic load: no lock, no clock read, no allocation. It
// never waits, so ctx is not used. The ticket is always 0.
//
// An admitted call is counted as a request when Done reports it (so a
// call in flight is not yet counted, and an abandoned one never is); a
// rejected one only with AdaptiveSettings.CountRejections, when it is
// rejected.
func (a *Adaptive) Admit(ctx context.Context) (ticket uint64, err error) {
	if a.threshold.Load() == 0 {
		return 0, nil
	}
	err = a.admitSlow(a.ns(a.clock()))
	if err != nil && a.observer != nil {
		a.observer.Observe(ctx, observe.Event{Kind: observe.Throttled, Probability: a.Probability()})
	}
	return 0, err
}

// AdmitAt is Admit at an explicit time instead of the clock's.
func (a *Adaptive) AdmitAt(now time.Time) (ticket uint64, err error) {
	if a.threshold.Load() == 0 {
		return 0, nil
	}
	return 0, a.admitSlow(a.ns(now))
}

func (a *Adaptive) admitSlow(now int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.win.Fold(now)
	th := a.recompute(now)
	if th == 0 || a.rand()>>11 >= th {
		return nil
	}
	if a.countRej {
		a.win.AddAt(now, 1, 0) // a local rejection is a request too
		a.recompute(now)
	}
	return ErrThrottled
}

// Done reports how an admitted call ended, implementing admission.Guard. An
// accepted call is two atomic adds on one striped counter line; one that
// was not accepted takes the lock and reads the clock to update the
// rejection probability. An abandoned call is not counted at all.
func (a *Adaptive) Done(_ context.Context, ticket uint64, o admission.Outcome) {
	a.done(o, false, time.Time{})
}

// DoneAt is Done at an explicit time instead of the clock's.
func (a *Adaptive) DoneAt(now time.Time, ticket uint64, o admission.Outcome) { a.done(o, true, now) }

func (a *Adaptive) done(o admission.Outcome, haveNow bool, now time.Time) {
	switch {
	case o.Abandoned:
		return // it said nothing about the dependency: not a request
	case a.accepted(o):
		a.win.Add(1, 1)
		return
	}
	if !haveNow {
		now = a.clock()
	}
	ns := a.ns(now)
	a.mu.Lock()
	a.win.Fold(ns)
	a.win.AddAt(ns, 1, 0)
	a.recompute(ns)
	a.mu.Unlock()
}

// Probability returns the current local rejection probability, as of the
// last time it was computed (after a call that was not accepted, and on
// every call while it is above zero).
func (a *Adaptive) Probability() float64 {
	return float64(a.threshold.Load()) / (1 << 53)
}

// recompute computes the rejection probability from the window at now
// and stores it. The caller holds a.mu and has folded the stripes.
func (a *Adaptive) recompute(now int64) uint64 {
	req, acc := a.win.Sums(now)
	th := threshold(req, acc, a.k)
	a.threshold.Store(th)
	return th
}

// threshold is the SRE book's rejection probability
// max(0, (requests - K*accepts) / (requests + 1)), scaled to 2^53 so a
// 53-bit uniform draw below it rejects. It is at most 2^53.
func threshold(requests, accepts int64, k float64) uint64 {
	p := (float64(requests) - k*float64(accepts)) / (float64(requests) + 1)
	if !(p > 0) {
		return 0
	}
	return uint64(p * (1 << 53))
}

func (a *Adaptive) ns(t time.Time) int64 { return int64(t.Sub(a.epoch)) }
