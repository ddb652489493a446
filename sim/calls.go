package sim

import (
	"context"
	"errors"
	"time"

	"github.com/unherd/unherd/retry"
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

// Errors the dependency answers with. Both are transient: the retry
// policy's default classifier retries them.
var (
	errDown       = errors.New("sim: dependency unavailable")
	errOverloaded = errors.New("sim: dependency overloaded")
)

const (
	callStart   int32 = iota // a call starts in slot id
	callSend                 // slot id sends an attempt
	callArrive               // slot id's attempt reaches the dependency
	callReply                // slot id's answer arrives; arg is 1 for success
	callArrival              // open stream: the next call arrives
	callEnd                  // slot id's call ends, after the wait its policy asked for
)

// callSlot is one call in flight: its retry state, which the policy's
// state machine keeps (attempts, previous delay, charged class, the
// guard's ticket).
type callSlot struct {
	call retry.Call
}

type callRun struct {
	m      *callModel
	policy *retry.Policy
	slots  []callSlot
	free   []int32     // open stream: unused slots
	limit  tokenBucket // the dependency's capacity
	stats  callStats
}

// runCalls runs one seeded run of m with policy spec s.
func runCalls(done <-chan struct{}, seed, stream uint64, m *callModel, s *policySpec) (*callStats, error) {
	e := newEngine(seed, stream)
	e.done = done
	p, err := s.build(e)
	if err != nil {
		return nil, err
	}
	nb := int(m.end/m.bucket) + 1
	r := &callRun{m: m, policy: p,
		limit: tokenBucket{rate: m.capacity, burst: m.capacity / 10, tokens: m.capacity / 10},
		stats: callStats{load: make([]int64, nb), good: make([]int64, nb)}}
	if m.closed {
		r.slots = make([]callSlot, m.clients)
		for c := range m.clients {
			// Start the population spread over one think time, as if it
			// had been running for a while.
			e.after(time.Duration(e.float()*float64(m.think)), callStart, int32(c), 0)
		}
	} else {
		e.after(0, callArrival, 0, 0)
	}
	e.run(r, m.end)
	return &r.stats, nil
}

// sweepCalls runs every spec against the model of every population
// (model(true) is the closed one) over sweep, and returns the statistics
// population-major: run i is pops[i/len(specs)] with specs[i%len(specs)],
// seeded with stream i.
func sweepCalls(ctx context.Context, o Options, pops []bool, specs []policySpec, model func(closed bool) *callModel) ([]*callStats, error) {
	type out struct {
		st  *callStats
		err error
	}
	outs, err := sweep(ctx, o, len(pops)*len(specs), func(i int) out {
		st, err := runCalls(ctx.Done(), o.Seed, uint64(i), model(pops[i/len(specs)]), &specs[i%len(specs)])
		return out{st, err}
	})
	if err != nil {
		return nil, err
	}
	sts := make([]*callStats, len(outs))
	for i, ot := range outs {
		if ot.err != nil {
			return nil, ot.err
		}
		sts[i] = ot.st
	}
	return sts, nil
}

func (r *callRun) handle(e *engine, ev event) {
	m := r.m
	switch ev.kind {
	case callArrival:
		// The next arrival is scheduled first: the gap is at least a
		// microsecond (rates are capped), so this order is the one in
		// which an attempt's callSend event, run after this handler,
		// used to schedule its callArrive, and ties break as before.
		e.after(time.Duration(float64(time.Second)/m.rate), callArrival, 0, 0)
		r.start(e, r.alloc())
	case callStart:
		r.start(e, ev.id)
	case callSend:
		r.send(e, ev.id)
	case callArrive:
		ok := int64(0)
		if r.serve(e.elapsed()) {
			ok = 1
		}
		e.after(e.normal(m.hop, m.hopSD), callReply, ev.id, ok)
	case callReply:
		r.reply(e, ev.id, ev.arg == 1)
	case callEnd:
		r.end(e, ev.id)
	}
}

func (r *callRun) alloc() int32 {
	if n := len(r.free); n > 0 {
		id := r.free[n-1]
		r.free = r.free[:n-1]
		return id
	}
	r.slots = append(r.slots, callSlot{})
	return int32(len(r.slots) - 1)
}

func (r *callRun) start(e *engine, id int32) {
	r.slots[id] = callSlot{call: r.policy.Begin(false)}
	r.sendAfter(e, 0, id)
}

// sendAfter has slot id send an attempt d from now. With no delay and no
// other event due at this instant, the callSend event would be the very
// next one delivered, so the attempt is sent at once, without it: the
// same draws in the same order, the same result, one event fewer per
// call.
func (r *callRun) sendAfter(e *engine, d time.Duration, id int32) {
	if d <= 0 && e.alone() {
		r.send(e, id)
		return
	}
	e.after(d, callSend, id, 0)
}

// send has slot id send an attempt, if its guards admit it.
func (r *callRun) send(e *engine, id int32) {
	m := r.m
	if err := r.slots[id].call.Admit(context.Background()); err != nil {
		// A guard rejected the attempt: a local rejection ends the
		// call at once and is never retried.
		r.stats.rejected++
		r.end(e, id)
		return
	}
	r.stats.attempts++
	r.stats.load[e.elapsed()/m.bucket]++
	if t := e.elapsed(); t >= m.downFrom && t < m.downTo {
		r.stats.attemptsInOutage++
		if r.slots[id].call.Attempts() == 1 {
			r.stats.firstInOutage++
		}
	}
	e.after(e.normal(m.hop, m.hopSD), callArrive, id, 0)
}

// serve reports whether the dependency answers a request arriving at t
// with success: it is up and has capacity left.
func (r *callRun) serve(t time.Duration) bool {
	m := r.m
	if t >= m.downFrom && t < m.downTo {
		return false
	}
	if m.capacity <= 0 {
		return true
	}
	// A token bucket holding a tenth of a second's capacity.
	return r.limit.take(t)
}

func (r *callRun) reply(e *engine, id int32, ok bool) {
	s := &r.slots[id]
	if ok {
		s.call.Done(e.Now(), time.Time{}, nil, 0)
		r.stats.succeeded++
		r.stats.good[e.elapsed()/r.m.bucket]++
		r.end(e, id)
		return
	}
	err := errDown
	if t := e.elapsed(); t < r.m.downFrom || t >= r.m.downTo {
		err = errOverloaded
	}
	d := s.call.Done(e.Now(), time.Time{}, err, e.u64())
	if d.Reason != nil {
		if d.Reason == retry.ErrBudgetExhausted {
			r.stats.budgetOut++
		}
		if d.Wait {
			// The policy waits before it returns the error
			// (retry.WaitThenReturn): the caller hears of it later.
			e.after(d.Delay, callEnd, id, 0)
			return
		}
		r.end(e, id)
		return
	}
	r.sendAfter(e, d.Delay, id)
}

// end finishes slot id's call: a closed client thinks and calls again; an
// open stream's slot is freed.
func (r *callRun) end(e *engine, id int32) {
	r.stats.calls++
	if r.m.closed {
		e.after(e.exp(r.m.think), callStart, id, 0)
		return
	}
	r.free = append(r.free, id)
}
