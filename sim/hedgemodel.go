package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/unherd/unherd/hedge"
	retryengine "github.com/unherd/unherd/retry/engine"
	"github.com/unherd/unherd/sim/internal/engine"
)

// The fan-out model. Each request reads Keys keys; every key's primary
// copy goes to a random server, and its hedge or tied twin, if one is
// sent, to another (on the saturated fleet, to the same shard: see
// fleetSaturated). A server runs Threads copies at a time, first come
// first served, and starts none while it stalls.
//
// It spends events on what needs them, not on every key:
//
//   - Copies travel in messages, one per request, round and server: all
//     of a request's primaries for one server go in one message, as a
//     fan-out client batches keys per replica, and so do its hedges (or
//     twins) for one server. One network draw per message.
//   - A server keeps the time at which each thread frees up instead of a
//     completion event per copy: a copy that finds a thread free starts
//     at once, and an event is scheduled only when copies are queued
//     behind busy threads or a stall, for the moment the next can start.
//   - A request has one hedge timer, not one per key: all its keys are
//     sent at once and share the hedger's delay.
//   - A key's answer is settled without an event when no other copy can
//     beat it (no hedge can still be sent, or the other copy is resolved);
//     only keys whose primary answers after the hedge delay, the few a
//     hedge is for, get an event at their answer's arrival, and only for
//     the default hedger, which needs to hear of them then (answerEvents).
//   - A primary that nothing can drop before it starts is started as
//     soon as nothing is before it in its server's queue, at the instant
//     a thread will take it (aheadAt), without a wake-up event.
//
// None of this changes what the model computes, except that the copies
// of one message share one network delay: each copy starts at the instant
// it would start with an event of its own, and cancellation is decided at
// the same instants. The hedger hears of a hedged key when its answer
// arrives, of the others at the hedge timer (those answered by then) or
// at the request's end: a little late, never early.

// fleet is the kind of fleet a hedge run simulates.
type fleet int

const (
	// fleetStalled: servers at low load that stall now and then
	// (interference): a hedge to another server finds one that is not
	// stalled.
	fleetStalled fleet = iota
	// fleetLoaded: independent servers at SaturatedLoad with no stalls;
	// a hedge can still find a shorter queue.
	fleetLoaded
	// fleetSaturated: uniformly saturated. The servers are front-ends of
	// a shared bottleneck: each key lives on one shard, 100 shards at
	// SaturatedLoad, and every copy of a key, sent to whichever
	// front-end, queues at its shard and does the same work there. A
	// second copy waits as long as the first and only adds load.
	fleetSaturated
)

// Events of the hedge model.
const (
	hArrival int32 = iota // the next fan-out request arrives
	hMessage              // copies of request id reach a server; arg packs gen, round and server
	hWake                 // server id may start queued copies
	hTimer                // request id's hedge delay (or its twins' send time) passed; arg is gen
	hAnswer               // leaf id's best answer reaches the client; arg is gen
	hDone                 // request id's last answer reached the client; arg is gen
	hStall                // server id stalls
)

// Copy states.
const (
	cUnsent  uint8 = iota // not sent (yet)
	cQueued               // sent: in flight or queued at its server
	cStarted              // a server started it
	cDropped              // its server dropped it: cancelled before it started
)

const never = time.Duration(math.MaxInt64)

// hLeaf is one key's read: copy 0 is the primary, copy 1 the hedge or
// tied twin.
type hLeaf struct {
	server   [2]int32
	answer   time.Duration // earliest answer among started copies; never if none
	service  time.Duration // the primary's work; on the saturated fleet every copy's
	replyHop time.Duration // the primary's answer's network delay
	gen      uint32        // its request's gen when it arrived
	slot     int32         // its request's slot
	state    [2]uint8
	winner   uint8
	mayHedge bool // Begin allowed a hedge
	final    bool // no copy can beat answer any more
	told     bool // the hedger has heard of it
}

// hRequest is one fan-out request in flight; its leaves are
// leaves[slot*Keys : (slot+1)*Keys].
type hRequest struct {
	gen       uint32
	start     time.Duration
	delay     time.Duration // hedge delay, or the twins' lag
	timerDone bool
	remaining int // keys not final
	maxAnswer time.Duration
	// Messages: off[0][s] to off[0][s+1] are the leaves (in slot order)
	// whose primaries go to server s; the second copies (hedges or twins)
	// for server s are ids[off[1][s]:off[1][s+1]].
	ids []int32
	off [2][]int32
}

type hServer struct {
	free    []time.Duration // per thread, when it is free: a min-heap, free[0] first
	queue   []int64         // copy<<32 | gen
	head    int
	stalled time.Duration // no new work starts before this
	wakeAt  time.Duration // a pending hWake, or -1
	stallAt time.Duration // its next hStall; never if none
}

type hedgeRun struct {
	p        *hedgeParams
	fleet    fleet
	strategy int
	hedger   *hedge.Hedger // nil for no hedge and tied
	ahead    bool          // start primaries ahead where nothing can drop them (aheadAt)
	// answerEvents: settle a key that another copy may still beat when
	// its answer arrives, through an event, rather than when that copy
	// starts or is dropped. Only the default hedger needs it: its delay
	// and budget depend on when it hears of each key. The fixed hedge's
	// hedger does not (fixed delay, no budget, never suspended), and a
	// key settled later still has the same answer.
	answerEvents bool
	reqs         []hRequest
	leaves       []hLeaf
	cancelAt     [][2]time.Duration // tied only, per leaf: when the other copy's start reaches each copy's server
	freeSlots    freeList
	servers      []hServer
	env          fleetCursor // the fleet's own draws: stalls, placement, primaries
	rate         float64
	arrived      int
	count        []int32    // scratch, per server
	picked       []bool     // scratch, per key
	placed       [][2]int32 // scratch, per key: primary and second server
	out          hedgeOut
}

func (r *hedgeRun) Handle(e *engine.Engine, ev engine.Event) {
	switch ev.Kind {
	case hArrival:
		r.arrive(e)
	case hMessage:
		gen, round, s := unpackMsg(ev.Arg)
		if q := &r.reqs[ev.ID]; q.gen == gen {
			r.deliver(e, ev.ID, round, s)
		}
	case hWake:
		sv := &r.servers[ev.ID]
		if sv.wakeAt == e.Elapsed() {
			sv.wakeAt = -1
		}
		r.serve(e, ev.ID)
	case hTimer:
		if q := &r.reqs[ev.ID]; q.gen == uint32(ev.Arg) {
			r.timer(e, ev.ID)
		}
	case hAnswer:
		l := &r.leaves[ev.ID]
		if r.reqs[l.slot].gen == uint32(ev.Arg) && !l.final && l.answer == e.Elapsed() {
			r.settle(e, ev.ID)
		}
	case hDone:
		if q := &r.reqs[ev.ID]; q.gen == uint32(ev.Arg) {
			r.done(ev.ID)
		}
	case hStall:
		sv := &r.servers[ev.ID]
		sv.stalled = max(sv.stalled, e.Elapsed()+r.stallLength())
		r.stallIn(e, ev.ID)
	}
}

func packMsg(gen uint32, round int, s int32) int64 {
	return int64(gen)<<32 | int64(round)<<31 | int64(s)
}

func unpackMsg(arg int64) (gen uint32, round int, s int32) {
	return uint32(arg >> 32), int(arg>>31) & 1, int32(arg & (1<<31 - 1))
}

// arrive starts the next fan-out request: it places its keys, asks the
// hedger whether each may hedge, and sends the primaries.
func (r *hedgeRun) arrive(e *engine.Engine) {
	slot := r.alloc()
	q := &r.reqs[slot]
	now := e.Elapsed()
	q.start, q.timerDone, q.remaining, q.maxAnswer = now, false, r.p.Keys, 0
	base := int(slot) * r.p.Keys
	hedges := false
	// The keys' placement and primaries, laid out by primary server so
	// that the copies of one message sit side by side in memory.
	ad := r.arrivalDraws()
	copy(q.off[0], ad.off)
	for i := range ad.keys {
		kd := &ad.keys[i]
		r.leaves[base+i] = hLeaf{server: kd.server, state: [2]uint8{cQueued, cUnsent}, gen: q.gen, slot: slot,
			answer: never, service: kd.service, replyHop: kd.replyHop}
	}
	if r.hedger != nil {
		for k := range r.p.Keys {
			if d, ok := r.hedger.Begin(); ok {
				r.leaves[base+int(ad.pos[k])].mayHedge, q.delay, hedges = true, d, true
			}
		}
	}
	r.out.keys += int64(r.p.Keys)
	switch {
	case r.strategy == hedgeTied:
		// Dean and Barroso's tied requests: the twin follows after twice
		// the mean network delay, so that a primary that starts at once
		// can cancel it before it arrives.
		q.delay, hedges = 2*r.p.Hop, true
		for k := range r.p.Keys {
			r.leaves[base+k].mayHedge = true
			r.cancelAt[base+k] = [2]time.Duration{never, never}
		}
	case r.hedger == nil:
		q.timerDone = true
	}
	if hedges {
		e.After(q.delay, hTimer, slot, int64(q.gen))
	} else {
		q.timerDone = true
	}
	// The primaries: one message per server, a range of the leaves.
	r.out.sent += int64(r.p.Keys)
	for i, s := range ad.servers {
		e.After(ad.hops[i], hMessage, slot, packMsg(q.gen, 0, s))
	}
	r.arrived++
	if r.arrived < r.p.Requests {
		e.After(time.Duration(float64(time.Second)/r.rate), hArrival, 0, 0)
	}
}

// alloc returns a free request slot, growing the pools if none is free.
func (r *hedgeRun) alloc() int32 {
	if slot, reused := r.freeSlots.take(len(r.reqs)); reused {
		return slot
	}
	r.reqs = append(r.reqs, hRequest{})
	q := &r.reqs[len(r.reqs)-1]
	q.ids = make([]int32, 0, r.p.Keys)
	for i := range q.off {
		q.off[i] = make([]int32, r.p.Servers+1)
	}
	r.leaves = slices.Grow(r.leaves, r.p.Keys)[:len(r.leaves)+r.p.Keys] // arrive fills them
	if r.strategy == hedgeTied {
		r.cancelAt = slices.Grow(r.cancelAt, r.p.Keys)[:len(r.leaves)]
	}
	return int32(len(r.reqs) - 1)
}

// send sends the second copy of every key k of request slot for which
// pick(k) holds: one message per server, ordered by server (a counting
// sort). The primaries need none: arrive lays the leaves out by primary
// server.
func (r *hedgeRun) send(e *engine.Engine, slot int32, pick func(k int) bool) {
	const round = 1
	q := &r.reqs[slot]
	base := int(slot) * r.p.Keys
	clear(r.count)
	n := 0
	for k := range r.p.Keys {
		r.picked[k] = pick(k) // once: pick may have effects (Admit)
		if r.picked[k] {
			r.count[r.leaves[base+k].server[round]]++
			n++
		}
	}
	off := q.off[round]
	off[0] = 0
	for s := range r.p.Servers {
		off[s+1] = off[s] + r.count[s]
	}
	ids := q.ids[:n]
	copy(r.count, off[:r.p.Servers])
	for k := range r.p.Keys {
		if r.picked[k] {
			l := &r.leaves[base+k]
			s := l.server[round]
			ids[r.count[s]] = int32(2*(base+k) + round)
			r.count[s]++
			l.state[round] = cQueued
		}
	}
	q.ids = ids
	r.out.sent += int64(n)
	for s := range r.p.Servers {
		if off[s+1] > off[s] {
			e.After(r.hop(e.Rand()), hMessage, slot, packMsg(q.gen, round, int32(s)))
		}
	}
}

// deliver queues the copies of request slot's round-th message at server
// s. A tied twin whose primary's cancellation got there first is dropped
// on arrival.
func (r *hedgeRun) deliver(e *engine.Engine, slot int32, round int, s int32) {
	q := &r.reqs[slot]
	sv := &r.servers[s]
	now := e.Elapsed()
	if round == 0 {
		base := int32(int(slot) * r.p.Keys)
		for i := q.off[0][s]; i < q.off[0][s+1]; i++ {
			if sv.head == len(sv.queue) && r.startAhead(e, sv, base+i) {
				continue
			}
			sv.queue = append(sv.queue, int64(2*(base+i))<<32|int64(q.gen))
		}
		r.serve(e, s)
		return
	}
	for _, c := range q.ids[q.off[1][s]:q.off[1][s+1]] {
		if r.cancelled(c/2, int(c%2), now) {
			r.drop(e, c/2, int(c%2))
			continue
		}
		sv.queue = append(sv.queue, int64(c)<<32|int64(q.gen))
	}
	r.serve(e, s)
}

// serve starts queued copies on server s while it has a free thread and
// is not stalled, dropping copies whose key was answered or whose tied
// twin started first; it schedules a wake-up for when it can go on.
func (r *hedgeRun) serve(e *engine.Engine, s int32) {
	sv := &r.servers[s]
	now := e.Elapsed()
	for sv.head < len(sv.queue) {
		x := sv.queue[sv.head]
		c, gen := int32(x>>32), uint32(x)
		leaf := int(c / 2)
		l := &r.leaves[leaf]
		cp := int(c % 2)
		if l.gen != gen {
			// The slot holds a newer request. (Between the end of a
			// request and the reuse of its slot, a copy left in a queue
			// has an answer already and is dropped below.)
			sv.head++
			continue
		}
		if r.cancelled(int32(leaf), cp, now) {
			sv.head++
			r.drop(e, int32(leaf), cp)
			continue
		}
		if now < sv.stalled || sv.free[0] > now {
			if start, ok := r.aheadAt(sv, int32(leaf), cp, now); ok {
				sv.head++
				r.startAt(e, sv, int32(leaf), start)
				continue
			}
			if now < sv.stalled {
				r.wake(e, s, sv.stalled)
			} else {
				r.wake(e, s, sv.free[0])
			}
			return
		}
		sv.head++
		svc, hop := l.service, l.replyHop
		if cp == 1 {
			if r.fleet != fleetSaturated {
				svc = e.Lognormal(r.p.Service, r.p.Sigma)
			}
			hop = r.hop(e.Rand())
		}
		sv.free[0] = now + svc
		siftFree(sv.free)
		r.out.executed++
		l.state[cp] = cStarted
		if r.strategy == hedgeTied {
			// Tell the twin's server, even if the twin has not reached
			// it yet: it drops the twin on arrival. The same server
			// knows at once.
			lag := time.Duration(0)
			if l.server[0] != l.server[1] {
				lag = e.Normal(r.p.CancelHop, r.p.CancelHop/5)
			}
			ca := &r.cancelAt[leaf][1-cp]
			*ca = min(*ca, now+lag)
		}
		r.started(e, int32(leaf), cp, now+svc+hop)
	}
	if sv.head == len(sv.queue) {
		sv.queue, sv.head = sv.queue[:0], 0
	} else if sv.head > 64 && sv.head > len(sv.queue)/2 {
		sv.queue = append(sv.queue[:0], sv.queue[sv.head:]...)
		sv.head = 0
	}
}

// startAhead starts leaf's primary on server sv, whose queue is empty,
// now if a thread is free, or else at the instant serve would start it,
// without waiting for that instant, and reports whether it did (see
// aheadAt).
func (r *hedgeRun) startAhead(e *engine.Engine, sv *hServer, leaf int32) bool {
	start, ok := r.aheadAt(sv, leaf, 0, e.Elapsed())
	if ok {
		r.startAt(e, sv, leaf, start)
	}
	return ok
}

// aheadAt reports whether leaf's copy cp, next in line on server sv at
// now, may be started ahead of its instant, and that instant. The server
// is first come first served, so a copy's start is known as soon as
// nothing is before it in the queue, unless a stall begins before it or
// its key's other copy could have it dropped first; both cases it leaves
// to serve. Only a primary qualifies, and only when no other copy can
// exist before it starts: without hedging; for a key the hedger did not
// let hedge, or did not hedge at its request's hedge delay; or when it
// starts before that delay (a hedge, or a tied twin, is sent no sooner).
// A tied primary whose twin goes to another server is left to serve too,
// because its start draws the cancellation's network delay from the
// run's source, and drawing it early would change the draws' order. The
// copy starts when it would and does what it would; only the wake-up
// event serve would schedule for it is saved (one per key on a busy
// fleet).
func (r *hedgeRun) aheadAt(sv *hServer, leaf int32, cp int, now time.Duration) (time.Duration, bool) {
	start := max(now, sv.stalled, sv.free[0])
	if !r.ahead || cp != 0 || start >= sv.stallAt {
		return 0, false
	}
	l := &r.leaves[leaf]
	if r.strategy == hedgeNone || !l.mayHedge {
		return start, true
	}
	q := &r.reqs[l.slot]
	if q.timerDone && l.state[1] == cUnsent {
		return start, true // not hedged at the hedge delay: never will be
	}
	if start >= q.start+q.delay || r.strategy == hedgeTied && l.server[0] != l.server[1] {
		return 0, false
	}
	return start, true
}

// startAt starts leaf's primary on server sv at start (see aheadAt).
func (r *hedgeRun) startAt(e *engine.Engine, sv *hServer, leaf int32, start time.Duration) {
	l := &r.leaves[leaf]
	sv.free[0] = start + l.service
	siftFree(sv.free)
	r.out.executed++
	l.state[0] = cStarted
	if r.strategy == hedgeTied {
		ca := &r.cancelAt[leaf][1]
		*ca = min(*ca, start) // the twin's server is this one: it knows at once
	}
	r.started(e, leaf, 0, start+l.service+l.replyHop)
}

// stallIn schedules server s's next stall.
func (r *hedgeRun) stallIn(e *engine.Engine, s int32) {
	d := r.stallGap()
	r.servers[s].stallAt = e.Elapsed() + d
	e.After(d, hStall, s, 0)
}

// wake makes sure server s is served again at t.
func (r *hedgeRun) wake(e *engine.Engine, s int32, t time.Duration) {
	sv := &r.servers[s]
	if sv.wakeAt >= 0 && sv.wakeAt <= t {
		return
	}
	sv.wakeAt = t
	e.At(t, hWake, s, 0)
}

// cancelled reports whether leaf's copy cp is to be dropped at now: its
// key has its answer, or (tied) the other copy's start has reached its
// server.
func (r *hedgeRun) cancelled(leaf int32, cp int, now time.Duration) bool {
	return r.leaves[leaf].answer <= now || r.cancelAt != nil && r.cancelAt[leaf][cp] <= now
}

// pending reports whether leaf's copy cp may still start: it is queued,
// or it is a hedge or twin that its request may still send.
func (r *hedgeRun) pending(leaf int32, cp int) bool {
	l := &r.leaves[leaf]
	switch l.state[cp] {
	case cQueued:
		return true
	case cUnsent:
		q := &r.reqs[l.slot]
		return cp == 1 && l.mayHedge && !q.timerDone && l.answer > q.start+q.delay
	}
	return false
}

// started records that leaf's copy cp started and will answer at answer.
func (r *hedgeRun) started(e *engine.Engine, leaf int32, cp int, answer time.Duration) {
	l := &r.leaves[leaf]
	if answer < l.answer {
		l.answer, l.winner = answer, uint8(cp)
	}
	if l.final {
		return
	}
	switch {
	case !r.pending(leaf, 1-cp):
		r.settle(e, leaf) // nothing else can answer sooner
	case l.answer == answer && r.answerEvents:
		// The other copy may still beat it: settle when it arrives.
		e.At(answer, hAnswer, leaf, int64(r.reqs[l.slot].gen))
	}
}

// drop records that leaf's copy cp was dropped by its server.
func (r *hedgeRun) drop(e *engine.Engine, leaf int32, cp int) {
	l := &r.leaves[leaf]
	l.state[cp] = cDropped
	if !l.final && l.answer != never && !r.pending(leaf, 1-cp) {
		r.settle(e, leaf)
	}
}

// timer runs at request slot's hedge delay: it hedges every key that may
// and has no answer yet, if the hedger admits it, and tells the hedger of
// the keys answered by now. For tied requests it sends every twin.
func (r *hedgeRun) timer(e *engine.Engine, slot int32) {
	q := &r.reqs[slot]
	q.timerDone = true
	now := e.Elapsed()
	base := int(slot) * r.p.Keys
	if r.strategy == hedgeTied {
		r.send(e, slot, func(int) bool { return true })
		return
	}
	r.send(e, slot, func(k int) bool {
		l := &r.leaves[base+k]
		return l.mayHedge && l.answer > now && r.admitHedge()
	})
	for k := range r.p.Keys {
		leaf := int32(base + k)
		l := &r.leaves[leaf]
		if l.state[1] == cUnsent && !l.final && l.answer != never && !r.pending(leaf, 0) {
			r.settle(e, leaf) // no hedge: the primary's answer stands
		}
		if l.final && l.answer <= now {
			r.tell(q, l)
		}
	}
}

// settle makes leaf's answer final.
func (r *hedgeRun) settle(e *engine.Engine, leaf int32) {
	l := &r.leaves[leaf]
	l.final = true
	slot := l.slot
	q := &r.reqs[slot]
	if l.answer <= e.Elapsed() {
		r.tell(q, l) // settled by its answer's arrival
	}
	q.maxAnswer = max(q.maxAnswer, l.answer)
	q.remaining--
	if q.remaining == 0 {
		e.At(q.maxAnswer, hDone, slot, int64(q.gen))
	}
}

// tell reports leaf l of request q to the hedger, once.
func (r *hedgeRun) tell(q *hRequest, l *hLeaf) {
	if r.hedger == nil || l.told {
		return
	}
	l.told = true
	r.hedger.Observe(l.answer - q.start)
	if l.state[1] != cUnsent {
		r.hedger.Result(l.winner == 1)
	}
	// Reads do not fail in this model: the key's request is recorded as
	// a success when it ends, admitted then, since the hedger's policy has
	// no guards to ask before.
	req, _ := retryengine.AdmitRequest(context.Background(), r.hedger.Policy(), false)
	req.End(nil)
}

// admitHedge asks the hedger's policy to admit a hedge, as hedge.Do does,
// and reports whether it may be sent. Its success is recorded at once:
// reads do not fail in this model, and a copy's success tells a budget
// only what its cost was (a Ratio counts calls, not copies).
func (r *hedgeRun) admitHedge() bool {
	req, err := retryengine.AdmitRequest(context.Background(), r.hedger.Policy(), true)
	if err != nil {
		return false
	}
	req.End(nil)
	return true
}

// done ends request slot: its latency is its last key's answer.
func (r *hedgeRun) done(slot int32) {
	q := &r.reqs[slot]
	if r.hedger != nil {
		base := int(slot) * r.p.Keys
		for k := range r.p.Keys {
			r.tell(q, &r.leaves[base+k])
		}
	}
	r.out.latencies = append(r.out.latencies, q.maxAnswer-q.start)
	q.gen++ // every copy still queued is now stale
	r.freeSlots.put(slot)
}

// draw draws one copy's service time from src.
func (r *hedgeRun) draw(src *rand.Rand) time.Duration {
	return time.Duration(float64(r.p.Service) * math.Exp(src.NormFloat64()*r.p.Sigma))
}

// hop draws one network delay from src: |Normal(Hop, Hop/5)|.
func (r *hedgeRun) hop(src *rand.Rand) time.Duration {
	return time.Duration(math.Abs(float64(r.p.Hop) + src.NormFloat64()*float64(r.p.Hop/5)))
}

// siftFree restores the min-heap order of free after free[0] grew: it
// moves the hole left by free[0] down the path of the smaller children
// and puts the new time where it stops.
func siftFree(free []time.Duration) {
	n := len(free)
	if n < 2 {
		return
	}
	x := free[0]
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && free[c+1] < free[c] {
			c++
		}
		if free[c] >= x {
			break
		}
		free[i] = free[c]
		i = c
	}
	free[i] = x
}
