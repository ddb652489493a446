// Package engine is the simulator's discrete-event engine: a queue of
// events in virtual time, a clock, and a seeded random source, for one
// run on one goroutine. The scenarios of package sim are its handlers.
package engine

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Epoch is the wall-clock instant at which every run's virtual time
// starts. Library objects that read a clock (budgets, breakers, hedgers)
// are given the run's virtual clock, which starts here.
var Epoch = time.Date(2015, time.March, 4, 0, 0, 0, 0, time.UTC)

// Event is one scheduled happening. Events are plain values in typed
// slices: scheduling one allocates nothing once the queue has grown, and
// no closure is built per event. Kind and ID tell the scenario's handler
// what to do and to whom; Arg carries one extra integer.
type Event struct {
	At   time.Duration // virtual time since Epoch
	Kind int32
	ID   int32
	Arg  int64
}

// Handler receives a run's events in time order.
type Handler interface {
	Handle(e *Engine, ev Event)
}

// Engine is one run's discrete-event loop: a queue of events, a virtual
// clock and a seeded random source. An engine is used by one goroutine;
// runs in parallel each have their own.
//
// The queue is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) with
// 6-bit digits, which fits a simulation because no event is ever scheduled
// before the present. Times are compared with last, the latest time the
// queue has handed out: events due exactly at last wait in due, in the
// order they were scheduled; any other event sits in the bucket named by
// the highest 6-bit digit (level) in which its time differs from last and
// by its own value of that digit. Scheduling is an append. When due runs
// dry, the lowest non-empty bucket holds the earliest events: a bucket of
// one event hands it out at once; a larger one is scanned for its
// earliest time, which becomes last, and its events move to due or to
// lower levels. An event moves at most once per level, and in practice
// once or twice, where a binary heap would compare it at every one of its
// levels. A level's 64 buckets have one 64-bit word of flags, so the
// lowest non-empty bucket is two trailing-zero counts away; wider digits
// move events less often but spread them over more memory, and measured
// slower.
//
// Every bucket stays in scheduling order: an append is the latest event
// scheduled, and a move copies one bucket, in order, into lower ones that
// are all empty. So events due at the same instant leave in the order they
// were scheduled, as with a heap ordered by (time, sequence number), and
// the same seed gives the same run.
type Engine struct {
	now     time.Duration
	last    uint64 // the radix heap's reference time: last <= every pending event's time
	due     []Event
	head    int             // next event of due to deliver
	buckets [16][64][]Event // [level][digit]; levels 11 to 15 are never used
	levels  uint32          // bit l set: some buckets[l][...] is not empty
	digits  [16]uint64      // bit d of digits[l] set: buckets[l][d] is not empty
	pcg     *rand.PCG       // the run's random source
	rng     *rand.Rand      // draws from pcg
	events  uint64          // events handled so far
	// done, if set, stops the run early when closed (StopOn).
	done <-chan struct{}
}

// New returns an engine at virtual time zero whose random source is
// a PCG seeded from seed and stream: the runs of a sweep share the seed and
// differ by stream (their index), so a run's draws depend on nothing but
// the two.
func New(seed, stream uint64) *Engine {
	pcg := rand.NewPCG(seed, Mix(stream))
	return &Engine{pcg: pcg, rng: rand.New(pcg)}
}

// Mix spreads consecutive stream numbers over the PCG's state space
// (SplitMix64's finaliser).
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// StopOn makes the run stop early once done is closed: Run returns, and
// Stopped reports true. The caller then discards the run's result.
func (e *Engine) StopOn(done <-chan struct{}) { e.done = done }

// Events returns the number of events handled so far.
func (e *Engine) Events() uint64 { return e.events }

// Source returns the run's random source, for library objects that take
// one (their draws then come from the run's seed).
func (e *Engine) Source() *rand.PCG { return e.pcg }

// Rand returns a rand.Rand over the run's random source.
func (e *Engine) Rand() *rand.Rand { return e.rng }

// Now returns the virtual time as a wall-clock instant; pass e.Now as the
// Now func of library objects.
func (e *Engine) Now() time.Time { return Epoch.Add(e.now) }

// Elapsed returns the virtual time since Epoch.
func (e *Engine) Elapsed() time.Duration { return e.now }

// At schedules an event at virtual time t (not before now).
func (e *Engine) At(t time.Duration, kind, id int32, arg int64) {
	if t < e.now {
		t = e.now
	}
	e.put(Event{At: t, Kind: kind, ID: id, Arg: arg})
}

// Alone reports whether no other event is due at the present instant:
// an event scheduled now would be the next one delivered. A handler may
// then do that event's work at once instead of scheduling it, with the
// same result.
func (e *Engine) Alone() bool { return e.head == len(e.due) }

// After schedules an event d after now.
func (e *Engine) After(d time.Duration, kind, id int32, arg int64) {
	e.At(e.now+d, kind, id, arg)
}

// put appends ev to its bucket; ev.at must not be before last.
func (e *Engine) put(ev Event) {
	b := e.bucket(uint64(ev.At))
	*b = append(*b, ev)
}

// bucket returns the bucket for time t (not before last) and marks it
// non-empty.
func (e *Engine) bucket(t uint64) *[]Event {
	x := t ^ e.last
	if x == 0 {
		return &e.due
	}
	l := uint(bits.Len64(x)-1) / 6 & 15
	d := (t >> (6 * l)) & 63
	e.levels |= 1 << l
	e.digits[l] |= 1 << d
	return &e.buckets[l][d]
}

// refill moves the earliest pending events into due, which must have
// been delivered in full, or reports false if no event is pending.
func (e *Engine) refill() bool {
	e.due, e.head = e.due[:0], 0
	if e.levels == 0 {
		return false
	}
	// The lowest non-empty bucket holds the earliest events.
	l := bits.TrailingZeros32(e.levels) & 15
	d := bits.TrailingZeros64(e.digits[l]) & 63
	src := e.buckets[l][d]
	e.digits[l] &^= 1 << d
	if e.digits[l] == 0 {
		e.levels &^= 1 << l
	}
	// Its events all go to lower levels or to due, never back to it.
	e.buckets[l][d] = src[:0]
	if len(src) == 1 {
		// The common case on a sparse queue: the bucket's one event is
		// the earliest.
		e.last = uint64(src[0].At)
		e.due = append(e.due, src[0])
		return true
	}
	min := uint64(src[0].At)
	for i := 1; i < len(src); i++ {
		if t := uint64(src[i].At); t < min {
			min = t
		}
	}
	e.last = min
	for i := range src {
		b := e.bucket(uint64(src[i].At))
		*b = append(*b, src[i])
	}
	return true
}

// Run delivers events to h in (time, sequence) order until the queue is
// empty or the next event is after until (a negative until means no
// limit). The clock ends at the last event delivered, or at until if the
// queue still holds later events.
func (e *Engine) Run(h Handler, until time.Duration) {
	for {
		if e.head == len(e.due) && !e.refill() {
			return
		}
		p := &e.due[e.head]
		if until >= 0 && p.At > until {
			e.now = until
			return
		}
		if e.events&(1<<16-1) == 0 && e.Stopped() {
			return
		}
		ev := *p
		e.head++
		e.now = ev.At
		e.events++
		h.Handle(e, ev)
	}
}

// Stopped reports whether done is set and closed: the run should stop,
// and its sweep discards the result. Loops that do a run's work without
// events (fleet's per-client floors, the hedge fleets' shared steps) ask
// it too.
func (e *Engine) Stopped() bool {
	if e.done == nil {
		return false
	}
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// Random draws. All of a run's randomness comes from its engine.

// Uint64 is a uniformly random 64-bit draw, for backoff.Schedule.Delay and
// retry.Step.Rand.
// It calls the PCG directly rather than through rng's Source interface:
// the same draw, without the dynamic call.
func (e *Engine) Uint64() uint64 { return e.pcg.Uint64() }

// Float64 is uniform in [0, 1).
// It is rand.Rand.Float64's formula on u64: the same value from the same
// source.
func (e *Engine) Float64() float64 { return float64(e.Uint64()<<11>>11) / (1 << 53) }

// Normal draws |Normal(mean, sd)|, the network hop of Brooker's model.
func (e *Engine) Normal(mean, sd time.Duration) time.Duration {
	d := float64(mean) + e.rng.NormFloat64()*float64(sd)
	return time.Duration(math.Abs(d))
}

// Exp draws an exponential duration with the given mean.
func (e *Engine) Exp(mean time.Duration) time.Duration {
	return time.Duration(e.rng.ExpFloat64() * float64(mean))
}

// Lognormal draws exp(Normal(ln median, sigma)) scaled to median.
func (e *Engine) Lognormal(median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(e.rng.NormFloat64()*sigma))
}
