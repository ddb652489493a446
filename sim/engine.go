package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Epoch is the wall-clock instant at which every run's virtual time
// starts. Library objects that read a clock (budgets, breakers, hedgers)
// are given the run's virtual clock, which starts here.
var Epoch = time.Date(2015, time.March, 4, 0, 0, 0, 0, time.UTC)

// event is one scheduled happening. Events are plain values in a typed
// slice: scheduling one allocates nothing once the queue has grown, and no
// closure is built per event. kind and id tell the scenario's handler what
// to do and to whom; arg carries one extra integer.
type event struct {
	at   time.Duration // virtual time since Epoch
	seq  uint64        // scheduling order, breaks ties deterministically
	kind int32
	id   int32
	arg  int64
}

// before orders events by (time, sequence): events scheduled for the same
// instant run in the order they were scheduled.
func (e *event) before(o *event) bool {
	return e.at < o.at || (e.at == o.at && e.seq < o.seq)
}

// arity is the heap's fan-out: a binary heap. (A 4-ary heap, half as
// deep, measured no faster here, even with 200,000 events pending.)
const arity = 2

// handler receives a run's events in time order.
type handler interface {
	handle(e *engine, ev event)
}

// engine is one run's discrete-event loop: a binary heap of events, a
// virtual clock and a seeded random source. An engine is used by one
// goroutine; runs in parallel each have their own.
type engine struct {
	now    time.Duration
	seq    uint64
	q      []event
	rng    *rand.Rand
	events uint64 // events handled so far
	// done, if set, stops the run early when closed; the sweep then
	// discards its result.
	done <-chan struct{}
}

// newEngine returns an engine at virtual time zero whose random source is
// a PCG seeded from seed and stream: the runs of a sweep share the seed and
// differ by stream (their index), so a run's draws depend on nothing but
// the two.
func newEngine(seed, stream uint64) *engine {
	return &engine{rng: rand.New(rand.NewPCG(seed, mix(stream))), q: make([]event, 0, 64)}
}

// mix spreads consecutive stream numbers over the PCG's state space
// (SplitMix64's finaliser).
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Now returns the virtual time as a wall-clock instant; pass e.Now as the
// Now func of library objects.
func (e *engine) Now() time.Time { return Epoch.Add(e.now) }

// elapsed returns the virtual time since Epoch.
func (e *engine) elapsed() time.Duration { return e.now }

// at schedules an event at virtual time t (not before now).
func (e *engine) at(t time.Duration, kind, id int32, arg int64) {
	if t < e.now {
		t = e.now
	}
	e.seq++
	e.q = append(e.q, event{at: t, seq: e.seq, kind: kind, id: id, arg: arg})
	// sift up
	q := e.q
	i := len(q) - 1
	ev := q[i]
	for i > 0 {
		p := (i - 1) / arity
		if !ev.before(&q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = ev
}

// after schedules an event d after now.
func (e *engine) after(d time.Duration, kind, id int32, arg int64) {
	e.at(e.now+d, kind, id, arg)
}

// pop removes and returns the earliest event; the queue must not be empty.
func (e *engine) pop() event {
	q := e.q
	top := q[0]
	n := len(q) - 1
	last := q[n]
	e.q = q[:n]
	q = q[:n]
	// sift down
	i := 0
	for {
		c := arity*i + 1
		if c >= n {
			break
		}
		// the earliest of up to arity children
		m := c
		for k := c + 1; k < c+arity && k < n; k++ {
			if q[k].before(&q[m]) {
				m = k
			}
		}
		if !q[m].before(&last) {
			break
		}
		q[i] = q[m]
		i = m
	}
	if n > 0 {
		q[i] = last
	}
	return top
}

// run delivers events to h in (time, sequence) order until the queue is
// empty or the next event is after until (a negative until means no
// limit). The clock ends at the last event delivered, or at until if the
// queue still holds later events.
func (e *engine) run(h handler, until time.Duration) {
	for len(e.q) > 0 {
		if until >= 0 && e.q[0].at > until {
			e.now = until
			return
		}
		if e.events&(1<<16-1) == 0 && e.done != nil {
			select {
			case <-e.done:
				return
			default:
			}
		}
		ev := e.pop()
		e.now = ev.at
		e.events++
		h.handle(e, ev)
	}
}

// Random draws. All of a run's randomness comes from its engine.

// u64 is a uniformly random 64-bit draw, for backoff.Schedule.Delay and
// retry.Step.Rand.
func (e *engine) u64() uint64 { return e.rng.Uint64() }

// float is uniform in [0, 1).
func (e *engine) float() float64 { return e.rng.Float64() }

// normal draws |Normal(mean, sd)|, the network hop of Brooker's model.
func (e *engine) normal(mean, sd time.Duration) time.Duration {
	d := float64(mean) + e.rng.NormFloat64()*float64(sd)
	return time.Duration(math.Abs(d))
}

// exp draws an exponential duration with the given mean.
func (e *engine) exp(mean time.Duration) time.Duration {
	return time.Duration(e.rng.ExpFloat64() * float64(mean))
}

// lognormal draws exp(Normal(ln median, sigma)) scaled to median.
func (e *engine) lognormal(median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(e.rng.NormFloat64()*sigma))
}
