package sim

import (
	"context"
	"errors"
	"math"
	"time"

	retryengine "github.com/unherd/unherd/retry/engine"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
)

// callModel is the model behind outage, storm and what-if: callers make
// calls to one dependency through a retry.Policy, and the dependency fails
// while it is down and sheds what exceeds its capacity. The callers are
// either a closed population (clients that loop: call, wait for the
// answer, think) or an open stream (calls arrive at a fixed rate whatever
// happens to earlier ones).
type callModel struct {
	closed   bool
	clients  int           // closed: population size
	think    time.Duration // closed: mean think time between calls (exponential)
	rate     float64       // open: arrivals per second
	hop      time.Duration // mean one-way network delay
	hopSD    time.Duration
	capacity float64       // requests per second the dependency serves; 0 means unlimited
	downFrom time.Duration // the dependency fails every request in [downFrom, downTo)
	downTo   time.Duration
	end      time.Duration // the run stops here
	bucket   time.Duration // width of the load time series' buckets
}

// callStats is what one run of a callModel measured.
type callStats struct {
	load      []int64 // attempts sent, per bucket
	good      []int64 // calls that succeeded, per bucket of their end
	attempts  int64
	calls     int64 // calls that ended (succeeded or failed)
	succeeded int64
	budgetOut int64 // calls the budget stopped
	rejected  int64 // calls a guard rejected locally
	// attempts sent while the dependency was down, and how many of them
	// were first attempts
	attemptsInOutage, firstInOutage int64
}

// Errors the dependency answers with. Both are transient, and judged so
// (retry.Judge) as an integration judges its protocol's answers: the
// policy's default classifier retries them and reads the verdict without
// looking further into the error.
var (
	errDown       = retry.Judge(errors.New("sim: dependency unavailable"), retry.Verdict{Class: failure.Transient})
	errOverloaded = retry.Judge(errors.New("sim: dependency overloaded"), retry.Verdict{Class: failure.Transient})
)

const (
	callStart   int32 = iota // a call starts in slot id
	callSend                 // slot id sends an attempt
	callReply                // slot id's answer arrives; arg is 1 for success
	callArrival              // open stream: the next call arrives
	callEnd                  // slot id's call ends, after the wait its policy asked for
)

// callSlot is one call in flight: its retry state, which the policy's
// state machine keeps (attempts, previous delay, charged class, the
// guard's ticket), and the way out of its next attempt.
type callSlot struct {
	call retryengine.Call
	out  time.Duration // the next attempt's hop to the dependency
}

type callRun struct {
	m      *callModel
	policy *retry.Policy
	tripSD time.Duration // deviation of a round trip, √2 hopSD
	gap    time.Duration // between an open stream's arrivals
	// perBucket is 1/bucket, in buckets per nanosecond (see bucketOf).
	perBucket float64
	// pure is true when the policy has no guard and no budget: its
	// Admit and Done then read no clock and touch nothing the other
	// calls share, so a call can be carried on past the present (see
	// follow).
	pure bool
	// pending counts the events the run has scheduled, other than the
	// open stream's next arrival, that are not yet delivered; when it is
	// not zero, none of them is due before floor (see arrive).
	pending int
	floor   time.Duration
	// arrivals is the most arrivals one callArrival event takes in:
	// maxArrivals, or 1 to compare with one event per arrival.
	arrivals int
	slots    []callSlot
	free     freeList    // open stream: unused slots
	limit    tokenBucket // the dependency's capacity
	stats    callStats
}

// runCalls runs one seeded run of m with policy spec s.
func runCalls(done <-chan struct{}, seed, stream uint64, m *callModel, s *policySpec) (*callStats, error) {
	e := engine.New(seed, stream)
	e.StopOn(done)
	r, err := newCallRun(e, m, s)
	if err != nil {
		return nil, err
	}
	r.run(e)
	return &r.stats, nil
}

// newCallRun builds a run of m with policy spec s on e.
func newCallRun(e *engine.Engine, m *callModel, s *policySpec) (*callRun, error) {
	p, err := s.build(e)
	if err != nil {
		return nil, err
	}
	nb := int(m.end/m.bucket) + 1
	var gap time.Duration
	if m.rate > 0 {
		gap = time.Duration(float64(time.Second) / m.rate)
	}
	return &callRun{gap: gap, m: m, policy: p, tripSD: time.Duration(math.Sqrt2 * float64(m.hopSD)),
		perBucket: 1 / float64(m.bucket), pure: s.pure(), arrivals: maxArrivals,
		limit: tokenBucket{rate: m.capacity, burst: m.capacity / 10, tokens: m.capacity / 10},
		stats: callStats{load: make([]int64, nb), good: make([]int64, nb)}}, nil
}

// run starts the callers and runs e to the model's end.
func (r *callRun) run(e *engine.Engine) {
	m := r.m
	if m.closed {
		r.slots = make([]callSlot, m.clients)
		for c := range m.clients {
			// Start the population spread over one think time, as if it
			// had been running for a while.
			r.slots[c].out = r.hop(e)
			r.at(e, time.Duration(e.Float64()*float64(m.think)), callStart, int32(c), 0)
		}
	} else {
		e.After(0, callArrival, 0, 0)
	}
	e.Run(r, m.end)
}

// sweepCalls runs every spec against the model of every population
// (model(true) is the closed one) over sweep, and returns the statistics
// population-major: run i is pops[i/len(specs)] with specs[i%len(specs)],
// seeded with stream i. If keep is set, only the runs it keeps are made
// (keep(closed, spec), spec an index of specs); the statistics of the
// others are nil, and the runs made keep their streams, so that each
// measures what it measures when every run is made.
func sweepCalls(ctx context.Context, o Options, pops []bool, specs []policySpec, model func(closed bool) *callModel, keep func(closed bool, spec int) bool) ([]*callStats, error) {
	type out struct {
		st  *callStats
		err error
	}
	var runs []int
	for i := range len(pops) * len(specs) {
		if keep == nil || keep(pops[i/len(specs)], i%len(specs)) {
			runs = append(runs, i)
		}
	}
	outs, err := sweep(ctx, o, len(runs), func(k int) out {
		i := runs[k]
		st, err := runCalls(ctx.Done(), o.Seed, uint64(i), model(pops[i/len(specs)]), &specs[i%len(specs)])
		return out{st, err}
	})
	if err != nil {
		return nil, err
	}
	sts := make([]*callStats, len(pops)*len(specs))
	for k, ot := range outs {
		if ot.err != nil {
			return nil, ot.err
		}
		sts[runs[k]] = ot.st
	}
	return sts, nil
}

func (r *callRun) Handle(e *engine.Engine, ev engine.Event) {
	if ev.Kind == callArrival {
		r.arrive(e)
		return
	}
	r.pending--
	switch ev.Kind {
	case callStart:
		r.start(e, ev.ID, e.Elapsed())
	case callSend:
		r.send(e, ev.ID, e.Elapsed())
	case callReply:
		r.reply(e, ev.ID, ev.Arg == 1)
	case callEnd:
		r.end(e, ev.ID, e.Elapsed())
	}
}

// at schedules an event at t (not before now) and keeps pending and
// floor.
func (r *callRun) at(e *engine.Engine, t time.Duration, kind, id int32, arg int64) {
	if r.pending == 0 || t < r.floor {
		r.floor = t
	}
	r.pending++
	e.At(t, kind, id, arg)
}

// maxArrivals bounds the arrivals one callArrival event takes in, so that
// a run still checks often enough whether it should stop.
const maxArrivals = 1024

// arrive takes in the open stream's arrivals from now on, at fixed
// intervals, and schedules the next one it leaves. With a pure policy,
// the arrivals due before any other event of the run are started here,
// each at its own time: nothing else would have happened in between (the
// dependency's capacity is decided in time order, and a pure policy reads
// no clock), so the run is the same as with an event per arrival, with
// fewer events. Other policies take one arrival per event: their guards
// and budgets read the engine's clock.
func (r *callRun) arrive(e *engine.Engine) {
	gap := r.gap
	t := e.Elapsed()
	for n := 1; ; n++ {
		r.start(e, r.alloc(), t)
		t += gap
		if !r.pure || n >= r.arrivals || t > r.m.end || (r.pending > 0 && t >= r.floor) {
			break
		}
	}
	e.At(t, callArrival, 0, 0)
}

func (r *callRun) alloc() int32 {
	id, reused := r.free.take(len(r.slots))
	if !reused {
		r.slots = append(r.slots, callSlot{})
	}
	return id
}

// bucketOf returns the index of the load and goodput buckets holding t,
// t/bucket: a multiplication, corrected to the exact quotient (the
// product is off by far less than one), costs less than the division at
// every attempt.
func (r *callRun) bucketOf(t time.Duration) int {
	b := int(float64(t) * r.perBucket)
	switch w := r.m.bucket; {
	case time.Duration(b)*w > t:
		b--
	case time.Duration(b+1)*w <= t:
		b++
	}
	return b
}

// hop draws a one-way network delay: an open stream's call on its way
// out, and a closed client's first.
func (r *callRun) hop(e *engine.Engine) time.Duration { return e.Normal(r.m.hop, r.m.hopSD) }

// trip draws slot id's answer's way back and its next attempt's way out
// (its next call's, for a closed client) as one round trip: the sum of
// two independent |Normal(hop, hopSD)| hops is Normal(2 hop, √2 hopSD) (a
// hop below zero is five deviations away), split in half. It returns the
// way back and keeps the way out in the slot.
func (r *callRun) trip(e *engine.Engine, id int32) time.Duration {
	rt := e.Normal(2*r.m.hop, r.tripSD)
	back := rt / 2
	r.slots[id].out = rt - back
	return back
}

// down reports whether the dependency is down at t.
func (r *callRun) down(t time.Duration) bool { return t >= r.m.downFrom && t < r.m.downTo }

// start begins a call in slot id at t (now, or later for an arrival
// taken in early) and sends its first attempt.
func (r *callRun) start(e *engine.Engine, id int32, t time.Duration) {
	s := &r.slots[id]
	s.call = retryengine.Begin(context.Background(), r.policy)
	if !r.m.closed {
		s.out = r.hop(e)
	}
	if t > e.Elapsed() {
		r.send(e, id, t)
		return
	}
	r.sendNow(e, id)
}

// sendNow has slot id send an attempt now. With no other event due at
// this instant, a callSend event would be the very next one delivered, so
// the attempt is sent at once, without it; otherwise it goes through the
// queue, after the events already due now.
func (r *callRun) sendNow(e *engine.Engine, id int32) {
	if e.Alone() {
		r.send(e, id, e.Elapsed())
		return
	}
	r.at(e, e.Elapsed(), callSend, id, 0)
}

// admit asks slot id's call to start an attempt sent at t and counts it;
// a guard's rejection ends the call at once, and a local rejection is
// never retried.
func (r *callRun) admit(e *engine.Engine, id int32, t time.Duration) bool {
	c := &r.slots[id].call
	if err := c.Admit(context.Background()); err != nil {
		r.stats.rejected++
		r.end(e, id, t)
		return false
	}
	st := &r.stats
	st.attempts++
	st.load[r.bucketOf(t)]++
	if r.down(t) {
		st.attemptsInOutage++
		if c.Attempts() == 1 {
			st.firstInOutage++
		}
	}
	return true
}

// send has slot id send an attempt at t (now, or for a pure policy the
// time of an arrival taken in early, see arrive), which reaches the
// dependency the slot's way out later. The dependency's answer is decided
// here, in the order attempts are sent (see serve), and the answer
// travels back half a round trip (see trip).
func (r *callRun) send(e *engine.Engine, id int32, t time.Duration) {
	if !r.admit(e, id, t) {
		return
	}
	a := t + r.slots[id].out
	ok := r.serve(a)
	back := a + r.trip(e, id)
	if r.pure {
		r.follow(e, id, back, ok)
		return
	}
	var arg int64
	if ok {
		arg = 1
	}
	r.at(e, back, callReply, id, arg)
}

// serve reports whether the dependency answers a request arriving at t
// with success: it is up and has capacity left. It is asked when the
// request is sent, in the order requests are sent, which is not quite the
// order in which they arrive (hops vary): the capacity's token bucket is
// refilled to the latest arrival time it has been asked about, so it
// still serves capacity per second over any stretch of time.
func (r *callRun) serve(t time.Duration) bool {
	if r.down(t) {
		return false
	}
	if r.m.capacity <= 0 {
		return true
	}
	// A token bucket holding a tenth of a second's capacity.
	return r.limit.take(t)
}

// reply delivers slot id's answer now; the call goes on after the wait
// its policy asks for.
func (r *callRun) reply(e *engine.Engine, id int32, ok bool) {
	t := e.Elapsed()
	d, more := r.answer(e, id, t, ok)
	if !more {
		return
	}
	if d == 0 {
		r.sendNow(e, id)
		return
	}
	r.at(e, t+d, callSend, id, 0)
}

// follow carries a pure policy's call on from the answer to its attempt
// that reaches it at t (ok for a success), without going through the
// queue: its Admit and Done depend on nothing but the call and the times
// given them, and the answer to an attempt that reaches the dependency
// while it is down is known when the attempt is sent. So a retry whose
// attempt arrives during the outage is made here, at once, with its
// virtual times, and the call stops at the first attempt that reaches
// the dependency while it is up: that attempt is sent by an event at
// its time, where its share of the capacity is decided in time order.
// Nothing the run would not reach (an answer or a send after its end)
// is counted.
func (r *callRun) follow(e *engine.Engine, id int32, t time.Duration, ok bool) {
	m := r.m
	for t <= m.end {
		d, more := r.answer(e, id, t, ok)
		if !more {
			return
		}
		next := t + d
		if next > m.end {
			return
		}
		a := next + r.slots[id].out
		if !r.down(a) {
			r.at(e, next, callSend, id, 0)
			return
		}
		if !r.admit(e, id, next) {
			return
		}
		t, ok = a+r.trip(e, id), false
	}
}

// answer has slot id's call hear at t (now, or later for follow) how its
// attempt ended. It reports whether the call goes on, and after what
// delay; if not, the call has ended, or will after the wait its policy
// asked for.
func (r *callRun) answer(e *engine.Engine, id int32, t time.Duration, ok bool) (time.Duration, bool) {
	c := &r.slots[id].call
	if ok {
		// After a success, Done uses neither the time nor the draw.
		c.Done(time.Time{}, time.Time{}, nil, 0)
		r.stats.succeeded++
		r.stats.good[r.bucketOf(t)]++
		r.end(e, id, t)
		return 0, false
	}
	err := errDown
	if !r.down(t) {
		err = errOverloaded
	}
	d := c.Done(epoch.Add(t), time.Time{}, err, e.Uint64())
	if d.Reason == nil {
		return d.Delay, true
	}
	if d.Reason == retry.ErrBudgetExhausted {
		r.stats.budgetOut++
	}
	if d.Wait {
		// The policy waits before it returns the error
		// (retry.WaitRetryDelay, retry.WaitSchedule): the caller hears of it later.
		r.at(e, t+d.Delay, callEnd, id, 0)
		return 0, false
	}
	r.end(e, id, t)
	return 0, false
}

// end finishes slot id's call at t: a closed client thinks and calls
// again; an open stream's slot is freed.
func (r *callRun) end(e *engine.Engine, id int32, t time.Duration) {
	r.stats.calls++
	if r.m.closed {
		r.at(e, t+e.Exp(r.m.think), callStart, id, 0)
		return
	}
	r.free.put(id)
}
