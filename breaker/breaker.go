package breaker

import (
	"cmp"
	"context"
	"errors"
	"math"
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

// State is a breaker's state.
type State uint8

const (
	// Closed lets every call through and counts failures.
	Closed State = iota
	// Open rejects every call with ErrOpen until the open period ends.
	Open
	// HalfOpen lets a limited number of probes through; their results
	// close the breaker or open it again.
	HalfOpen
)

var stateNames = [...]string{Closed: "closed", Open: "open", HalfOpen: "half-open"}

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Rejections. They are local rejections made with engine.NewRejection, so
// errors.Is matches them to retry.ErrRejected, and the retry loop never
// retries them: not when the breaker is one of its Guards, and not when
// the operation returns them itself (a breaker used through Allow inside
// the operation).
var (
	// ErrOpen: the breaker is open; the call was not made.
	ErrOpen = engine.NewRejection("breaker: open")
	// ErrTooManyProbes: the breaker is half-open and the allowed probes
	// are already in flight; the call was not made.
	ErrTooManyProbes = engine.NewRejection("breaker: half-open, probes in flight")
)

// Breaker is a circuit breaker. It implements admission.Guard, so a retry
// Policy consults it before every attempt, and offers Allow for
// middleware. The zero Breaker is not usable; call New. A Breaker is safe
// for concurrent use.
//
// Tickets (from Admit, AdmitAt, and inside Allow's done function) carry the
// breaker's generation, which changes on every state change: a result
// reported with a ticket from an earlier generation is ignored.
type Breaker struct {
	// state is generation<<2 | State. It is read on every call and
	// written only on state changes.
	state atomic.Uint64
	// consec counts consecutive failures while closed; a success stores
	// zero only if it is not zero already, so the line stays shared.
	consec atomic.Int64
	// openUntil is the end of the current open period, ns since epoch.
	openUntil atomic.Int64
	doneCache atomic.Pointer[cachedDone]

	_ [64]byte // keep the lock's writes off the lines read on every call

	mu        sync.Mutex
	probes    int // half-open probes in flight
	successes int // consecutive probe successes
	win       *rolling.Window

	maxConsec    int64 // <= 0: off
	rate         float64
	minCalls     int64
	openDuration time.Duration
	openJitter   float64
	maxProbes    int
	needSuccess  int
	isFailure    func(admission.Outcome) bool
	classify     func(error) failure.Class
	onChange     func(from, to State)
	observer     observe.Observer
	clock        func() time.Time
	rand         func() uint64
	epoch        time.Time
}

var _ admission.Guard = (*Breaker)(nil)

type cachedDone struct {
	ticket uint64
	fn     func(error)
}

// New validates s and returns a closed Breaker built from it.
func New(s Settings) (*Breaker, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	b := &Breaker{
		maxConsec:    int64(cmp.Or(s.ConsecutiveFailures, DefaultConsecutiveFailures)),
		rate:         cmp.Or(s.FailureRate, DefaultFailureRate),
		minCalls:     int64(cmp.Or(s.MinCalls, DefaultMinCalls)),
		openDuration: cmp.Or(s.OpenDuration, DefaultOpenDuration),
		openJitter:   max(cmp.Or(s.OpenJitter, DefaultOpenJitter), 0),
		maxProbes:    cmp.Or(s.HalfOpenProbes, DefaultHalfOpenProbes),
		needSuccess:  cmp.Or(s.SuccessThreshold, DefaultSuccessThreshold),
		isFailure:    s.IsFailure,
		classify:     s.Classify,
		onChange:     s.OnStateChange,
		observer:     s.Observer,
		clock:        s.Now,
		rand:         draws.From(s.Rand),
	}
	b.win = rolling.New(s.window())
	if b.isFailure == nil {
		b.isFailure = DefaultIsFailure
	}
	if b.classify == nil {
		b.classify = engine.DefaultClassify
	}
	if b.clock == nil {
		b.clock = time.Now
	}
	b.epoch = b.clock()
	b.win.Reset(0)
	b.state.Store(1<<2 | uint64(Closed)) // generation 1: a ticket is never 0
	return b, nil
}

// State returns the breaker's state. An open breaker whose open period has
// ended reports Open until the next call moves it to half-open.
func (b *Breaker) State() State { return State(b.state.Load() & 3) }

// Generation returns the breaker's generation: 1 at New, one more after
// every state change.
func (b *Breaker) Generation() uint64 { return b.state.Load() >> 2 }

// Admit asks to make a call, implementing admission.Guard. It returns a ticket
// to pass to Done, or ErrOpen or ErrTooManyProbes. In the closed state it
// is one atomic load: no lock, no clock read, no allocation. It does not
// wait, so ctx is not used.
func (b *Breaker) Admit(ctx context.Context) (ticket uint64, err error) {
	s := b.state.Load()
	if State(s&3) == Closed {
		return s, nil
	}
	return b.admitSlow(ctx, s, instant{})
}

// AdmitAt is Admit at an explicit time instead of the clock's.
func (b *Breaker) AdmitAt(now time.Time) (ticket uint64, err error) {
	s := b.state.Load()
	if State(s&3) == Closed {
		return s, nil
	}
	return b.admitSlow(context.Background(), s, instant{ns: b.ns(now), set: true})
}

// Done reports how an admitted call ended, implementing admission.Guard:
// a state change it causes reaches the observer with ctx, the call's
// context. Call it exactly once per ticket. A closed-state success is
// lock-free and reads no clock; a failure takes the lock and reads the
// clock once.
func (b *Breaker) Done(ctx context.Context, ticket uint64, o admission.Outcome) {
	b.done(ctx, ticket, o, instant{})
}

// DoneAt is Done at an explicit time instead of the clock's.
func (b *Breaker) DoneAt(now time.Time, ticket uint64, o admission.Outcome) {
	b.done(context.Background(), ticket, o, instant{ns: b.ns(now), set: true})
}

// Allow is the two-step form for middleware: it admits a call and returns
// the function to report its error with (nil for success), or a rejection.
// The done function classifies its error with Settings.Classify; an error
// that is or wraps context.Canceled counts as abandoned (neither success
// nor failure, but it frees a half-open probe slot). Call done exactly
// once.
//
// The done function is cached per generation: Allow allocates one closure
// on its first call after each state change and none after that.
func (b *Breaker) Allow() (done func(error), err error) {
	t, err := b.Admit(context.Background())
	if err != nil {
		return nil, err
	}
	if c := b.doneCache.Load(); c != nil && c.ticket == t {
		return c.fn, nil
	}
	c := &cachedDone{ticket: t, fn: func(err error) { b.Done(context.Background(), t, b.outcome(err)) }}
	b.doneCache.Store(c)
	return c.fn, nil
}

func (b *Breaker) outcome(err error) admission.Outcome {
	switch {
	case err == nil:
		return admission.Outcome{}
	case errors.Is(err, context.Canceled):
		return admission.Outcome{Err: err, Abandoned: true}
	}
	return admission.Outcome{Err: err, Class: b.classify(err)}
}

// instant is a time that is read from the clock only when needed.
type instant struct {
	ns  int64
	set bool
}

func (b *Breaker) now(t *instant) int64 {
	if !t.set {
		t.ns, t.set = b.ns(b.clock()), true
	}
	return t.ns
}

func (b *Breaker) ns(t time.Time) int64 { return int64(t.Sub(b.epoch)) }

// change is a state change to report after the lock is released.
type change struct{ from, to State }

// admitSlow admits or rejects a call while the breaker is not closed. The
// clock is read before the lock is taken, never under it; if the state
// changed in between, it starts over. ctx is the call's, for the observer.
func (b *Breaker) admitSlow(ctx context.Context, s uint64, now instant) (uint64, error) {
	for {
		if State(s&3) == Open && b.now(&now) < b.openUntil.Load() {
			return 0, ErrOpen
		}
		b.mu.Lock()
		if cur := b.state.Load(); cur != s {
			b.mu.Unlock()
			if State(cur&3) == Closed {
				return cur, nil
			}
			s = cur
			continue
		}
		var ch change
		if State(s&3) == Open {
			s = b.transition(s, HalfOpen, now.ns)
			ch = change{Open, HalfOpen}
		}
		var err error
		if b.probes >= b.maxProbes {
			s, err = 0, ErrTooManyProbes
		} else {
			b.probes++
		}
		b.mu.Unlock()
		b.report(ctx, ch)
		return s, err
	}
}

// done is Done for a call with context ctx.
func (b *Breaker) done(ctx context.Context, ticket uint64, o admission.Outcome, now instant) {
	if ticket != b.state.Load() {
		return // stale: from before a state change, or no ticket at all
	}
	// Hooks and the clock are called before the lock is taken.
	failed := !o.Abandoned && b.isFailure(o)
	if State(ticket&3) == Closed {
		if o.Abandoned {
			return
		}
		if !failed {
			b.win.Add(1, 0)
			if b.consec.Load() != 0 {
				b.consec.Store(0)
			}
			return
		}
	}
	if !o.Abandoned {
		b.now(&now)
	}
	var ch change
	b.mu.Lock()
	if ticket != b.state.Load() {
		b.mu.Unlock()
		return
	}
	switch State(ticket & 3) {
	case Closed:
		ch = b.closedFailure(ticket, now.ns)
	case HalfOpen:
		b.probes--
		switch {
		case o.Abandoned:
		case failed:
			b.transition(ticket, Open, now.ns)
			ch = change{HalfOpen, Open}
		default:
			b.successes++
			if b.successes >= b.needSuccess {
				b.transition(ticket, Closed, now.ns)
				ch = change{HalfOpen, Closed}
			}
		}
	}
	b.mu.Unlock()
	b.report(ctx, ch)
}

// closedFailure counts a failure in the closed state and trips the breaker
// if a threshold is reached. The caller holds b.mu.
func (b *Breaker) closedFailure(s uint64, now int64) change {
	b.win.Fold(now)
	b.win.AddAt(now, 1, 1)
	n := b.consec.Add(1)
	trip := b.maxConsec > 0 && n >= b.maxConsec
	if !trip && b.rate > 0 {
		calls, failures := b.win.Sums(now)
		trip = calls >= b.minCalls && float64(failures) >= b.rate*float64(calls)
	}
	if !trip {
		return change{}
	}
	b.transition(s, Open, now)
	return change{Closed, Open}
}

// transition moves from state s to state to at time now, starting a new
// generation, and returns the new state word. The caller holds b.mu.
func (b *Breaker) transition(s uint64, to State, now int64) uint64 {
	switch to {
	case Open:
		b.openUntil.Store(addSat(now, b.openPeriod()))
	case HalfOpen:
		b.probes, b.successes = 0, 0
	case Closed:
		b.win.Reset(now)
		b.consec.Store(0)
	}
	next := (s>>2+1)<<2 | uint64(to)
	b.state.Store(next)
	return next
}

// openPeriod draws the length of a new open period: OpenDuration plus up
// to OpenJitter of it, saturating at the largest Duration (OpenDuration
// may be as large as math.MaxInt64). The caller holds b.mu.
func (b *Breaker) openPeriod() time.Duration {
	d := b.openDuration
	if b.openJitter > 0 {
		frac := float64(b.rand()>>11) / (1 << 53)
		// Clamp the product before converting it: a float64 at or above
		// 2^63 has no int64 value. A float below float64(room) truncates
		// to at most room.
		extra := float64(d) * b.openJitter * frac
		if room := math.MaxInt64 - d; extra >= float64(room) {
			return math.MaxInt64
		}
		d += time.Duration(extra)
	}
	return d
}

// addSat returns now + d (d >= 0), saturating at math.MaxInt64: a period
// too long to represent never ends.
func addSat(now int64, d time.Duration) int64 {
	if now > 0 && int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// report tells the hooks about a state change caused by a call with
// context ctx (nil for none).
func (b *Breaker) report(ctx context.Context, ch change) {
	if ch == (change{}) {
		return
	}
	if b.onChange != nil {
		b.onChange(ch.from, ch.to)
	}
	if b.observer != nil {
		if ctx == nil {
			ctx = context.Background()
		}
		b.observer.Observe(ctx, observe.Event{Kind: observe.BreakerTransition, From: ch.from.String(), To: ch.to.String()})
	}
}
