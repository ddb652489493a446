package sim

import (
	"context"
	"errors"
	"math"
	"time"

	retryengine "github.com/unherd/unherd/retry/engine"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
)

// The metastable scenario's server model: threads workers take
// requests from one FIFO queue, each for an exponential service time
// whose mean is service, or service/(1-cut) for a request whose service
// starts while the trigger cuts the server's CPU. A request carries its
// caller's deadline; the server without a limiter serves every request
// it has queued, whether its caller still waits or not. With a limiter,
// a request that finds the limit full is refused at once, and a queued
// request whose caller's deadline has passed is dropped when a worker
// reaches it, without service (the server sheds it).

var (
	// errNoAnswer is an attempt that got no answer within the client's
	// timeout: retry's Timeout class.
	errNoAnswer = retryengine.MarkAttemptTimeout(errors.New("sim: no answer within the client's timeout"))
	// errRefused is the server's refusal over its concurrency limit (503
	// with Retry-After, RESOURCE_EXHAUSTED): a throttling error.
	errRefused = retry.Judge(errors.New("sim: refused over the server's concurrency limit"), retry.Verdict{Class: failure.Throttled})
)

// Event kinds of the metastable model.
const (
	msArrive  int32 = iota // a new request arrives (the open stream)
	msServed               // worker ID finishes its request
	msTimeout              // request ID's attempt Arg, the head of msRun.pending, reaches the client's timeout
	msRetry                // request ID makes its next attempt after a delay
)

// msModel is one run's server, load and trigger.
type msModel struct {
	rate     float64       // new requests per second
	threads  int           // workers
	service  time.Duration // mean service time at full CPU
	timeout  time.Duration // the client's timeout on each attempt
	from, to time.Duration // the trigger
	cut      float64       // the share of CPU the trigger takes away
	end      time.Duration // the run's length
	limited  bool          // the server runs a limiter and sheds gone callers
	// stopUp stops the run once it has recovered (see msRun.recovered):
	// the tipping-point map's cells set it. Every run stops once it is
	// provably down (see msRun.provablyDown).
	stopUp bool
	// full runs to the end, without stopping early: the test that the
	// early stop agrees with the full run sets it.
	full bool
	// resends says that the clients resend the moment an attempt times
	// out and never give up (Huang et al.'s client), which lets a run
	// stop as down sooner (msRun.resendsDown).
	resends bool
	// build, if set, builds the clients' policy on the run's clock in
	// place of the one runMetastable is given (a user's, whose budget
	// may keep time).
	build func(*engine.Engine) (*retry.Policy, error)
}

// msJudged is the stretch at the end of a run its outcome is judged on.
const msJudged = 10 * time.Second

// msStats are one run's per-second counters and totals.
type msStats struct {
	good     []int64 // answers to callers still waiting, by second
	offered  []int64 // new requests, by second
	attempts []int64 // attempts sent (and not refused), by second
	refused  int64   // attempts the limiter refused
	served   int64   // requests the workers served
	wasted   int64   // of them, requests whose caller had gone
	shed     int64   // queued requests dropped because their caller had gone
	gaveUp   int64   // calls that ended without an answer
	peak     int     // longest queue
	// stopped is when the run stopped early, zero if it ran to its end;
	// down says it stopped as provably down, else as recovered.
	stopped time.Duration
	down    bool
}

// msReq is one call: its retry state and its attempt in flight.
type msReq struct {
	call retryengine.Call
	cur  int64 // serial of the attempt its caller waits for; 0 when none
}

// msReqs holds a run's calls by slot, in pages that are never moved: a
// run that stays down holds hundreds of thousands of calls, which a
// growing slice would copy over and over.
type msReqs struct {
	pages [][]msReq
	n     int // slots in use or freed
}

// msPage is the number of calls on a page of msReqs.
const msPage = 1024

// at returns call slot id.
func (s *msReqs) at(id int32) *msReq { return &s.pages[id/msPage][id%msPage] }

// add returns a new slot.
func (s *msReqs) add() int32 {
	if s.n == len(s.pages)*msPage {
		s.pages = append(s.pages, make([]msReq, msPage))
	}
	s.n++
	return int32(s.n - 1)
}

// msEntry is one request in the server's queue or at a worker.
type msEntry struct {
	at     time.Duration // when it arrived
	serial int64         // the attempt's serial
	req    int32         // its call
}

// msRun is one run of the metastable model.
type msRun struct {
	m      msModel
	policy *retry.Policy
	lim    *limit.Limiter // nil: no limiter, no shedding
	reqs   msReqs
	free   []int32
	queue  ring[msEntry]
	toks   ring[limit.Token] // the queued requests' tokens, with a limiter
	work   []msEntry         // each worker's request
	wtok   []limit.Token     // each worker's token
	idle   []int32           // workers without a request
	serial int64
	stats  msStats
	// pending holds the attempts sent, in order, until they time out or
	// reach the head answered; armed says that an msTimeout event is set
	// for the head.
	pending ring[msPending]
	armed   bool
}

// msPending is an attempt's timeout.
type msPending struct {
	due    time.Duration
	serial int64
	req    int32
}

// runMetastable runs the model m with clients calling through policy,
// on the engine's seed and stream.
func runMetastable(ctx context.Context, seed, stream uint64, m msModel, policy *retry.Policy) (*msStats, error) {
	return runMetastableWith(ctx, seed, stream, m, func(*engine.Engine) (*retry.Policy, error) { return policy, nil })
}

// runMetastableWith is runMetastable with the clients' policy built by
// build on the run's engine (by m.build, if set), for a policy whose
// budget or guard keeps time on the run's clock.
func runMetastableWith(ctx context.Context, seed, stream uint64, m msModel, build func(*engine.Engine) (*retry.Policy, error)) (*msStats, error) {
	r := &msRun{m: m, work: make([]msEntry, m.threads), wtok: make([]limit.Token, m.threads)}
	if m.limited {
		l, err := limit.New(limit.Config{})
		if err != nil {
			return nil, err
		}
		r.lim = l
	}
	for w := m.threads - 1; w >= 0; w-- {
		r.idle = append(r.idle, int32(w))
	}
	secs := int(m.end/time.Second) + 1
	r.stats = msStats{good: make([]int64, secs), offered: make([]int64, secs), attempts: make([]int64, secs)}
	e := engine.New(seed, stream)
	e.StopOn(ctx.Done())
	if m.build != nil {
		build = m.build
	}
	policy, err := build(e)
	if err != nil {
		return nil, err
	}
	r.policy = policy
	e.At(r.gap(e), msArrive, 0, 0)
	// The run goes a second at a time, so that it can stop at the end of
	// any second at which its outcome is settled.
	for t := time.Second; t <= m.end; t += time.Second {
		e.Run(r, t)
		if e.Stopped() {
			return nil, ctx.Err()
		}
		if t == m.end {
			break
		}
		if !m.full && (r.provablyDown(t) || r.resendsDown(t) || (m.stopUp && r.recovered(t))) {
			r.stats.stopped, r.stats.down = t, !r.recovered(t)
			break
		}
	}
	return &r.stats, nil
}

// downOdds bounds the chance that a run provablyDown calls down
// recovers after all.
const downOdds = 1e-9

// provablyDown reports whether, at the end of second t, the run is
// down for good: no answer in the run's last msJudged can reach a caller
// still waiting, whatever happens next, unless the workers serve at 1.5
// times their mean rate at full CPU for the rest of the run, a chance
// under downOdds. It holds for a server without a limiter (one that
// serves every request it has queued, in order), when t is at least a
// client timeout before the judged stretch and the queue holds at least
// 1.5 times the requests the workers serve at full CPU in the rest of
// the run. Then:
//   - an attempt sent after t waits for every request queued at t to
//     start, which takes that many completions; the workers complete
//     requests no faster than a Poisson process of rate threads/service
//     (exponential services at full CPU, longer ones under the trigger),
//     which gives that many in the rest of the run with a chance under
//     exp(-μ(1.5 ln 1.5 - 0.5)), μ being its mean number (a Chernoff
//     bound), so no such attempt is answered in the run;
//   - a request queued or in service at t that is answered in the judged
//     stretch is answered at least a timeout after it was sent, when its
//     caller has gone.
//
// So the judged stretch's goodput is zero and the run stays down.
func (r *msRun) provablyDown(t time.Duration) bool {
	m := r.m
	if m.limited || t+m.timeout > m.end-msJudged {
		return false
	}
	mu := float64(m.threads) * float64(m.end-t) / float64(m.service)
	if mu*(1.5*math.Log(1.5)-0.5) < -math.Log(downOdds) {
		return false
	}
	return float64(r.queue.len()) >= 1.5*mu
}

// resendsDown reports whether, at the end of second t, a run whose
// clients resend at once and never give up (msModel.resends) is down
// for good: no answer from then on reaches a caller still waiting, unless
// in one of the stretches of a client timeout T that follow the workers
// complete more than f times their mean number at full CPU (C·T, C
// being threads/service), a chance that the Chernoff bound
// exp(-C·T(f ln f - f + 1)) per stretch, summed over the stretches left,
// keeps under downOdds; f is the least of 1.05, 1.1, 1.2 and 1.5 for
// which it does. With that many completions at most, any span of at most
// T has at most 2f·C·T. The run is down when, without a limiter:
//   - the queue holds more than 3f·C·T requests;
//   - the request 2f·C·T places from the queue's head was sent at least
//     T ago (so were those ahead of it and those at the workers);
//   - at least f·C·T calls are waiting for an answer;
//   - t is at least a timeout before the run's judged stretch.
//
// Then no request queued at t is answered in time: those within 2f·C·T
// of the head are past their timeout already, those further back wait
// for more completions than a timeout holds. An attempt sent in the
// stretch after t finds more than 3f·C·T - f·C·T = 2f·C·T requests ahead
// of it, and is not answered in time either. So no call ends in that
// stretch, each waiting call resends once in it (every attempt times out
// within T of its sending), the queue grows by at least f·C·T - f·C·T =
// 0 over it, and the same holds for the next stretch, to the end of the
// run.
func (r *msRun) resendsDown(t time.Duration) bool {
	m := r.m
	if !m.resends || m.limited || t+m.timeout > m.end-msJudged {
		return false
	}
	ct := float64(m.threads) * float64(m.timeout) / float64(m.service)
	stretches := float64(m.end-t)/float64(m.timeout) + 1
	f := 0.0
	for _, g := range []float64{1.05, 1.1, 1.2, 1.5} {
		if ct*(g*math.Log(g)-g+1)-math.Log(stretches) >= -math.Log(downOdds) {
			f = g
			break
		}
	}
	q := r.queue.len()
	head := int(math.Ceil(2 * f * ct))
	if f == 0 || float64(q) <= 3*f*ct || head >= q || float64(r.reqs.n-len(r.free)) < f*ct {
		return false
	}
	return t-r.queue.at(head).at >= m.timeout
}

// recovered reports whether, at the end of second t, the run has
// recovered, for a cell of the tipping-point map: the trigger ended at
// least msJudged before, each of the last msJudged seconds had a goodput
// of at least 95% of the load (the outcome's own test, on each second
// rather than on their mean), and the queue is empty. The server is
// then as it was before the trigger, where the run was healthy, with
// nobody waiting in its queue. Unlike provablyDown this is a judgement,
// not a proof: the scenario's own rows run to the end.
func (r *msRun) recovered(t time.Duration) bool {
	m := r.m
	if t < m.to+msJudged || r.queue.len() > 0 {
		return false
	}
	s := int(t / time.Second)
	for i := s - int(msJudged/time.Second); i < s; i++ {
		if float64(r.stats.good[i]) < 0.95*m.rate {
			return false
		}
	}
	return true
}

// gap draws the time to the next new request: a Poisson stream.
func (r *msRun) gap(e *engine.Engine) time.Duration {
	return e.Exp(time.Duration(float64(time.Second) / r.m.rate))
}

// Handle implements engine.Handler.
func (r *msRun) Handle(e *engine.Engine, ev engine.Event) {
	t := ev.At
	switch ev.Kind {
	case msArrive:
		e.At(t+r.gap(e), msArrive, 0, 0)
		id := r.slot()
		r.reqs.at(id).call = retryengine.Begin(context.Background(), r.policy)
		r.stats.offered[t/time.Second]++
		r.send(e, id, t)
	case msServed:
		r.finish(e, ev.ID, t)
	case msTimeout:
		r.pending.pop() // the head, which the event was set for
		r.armed = false
		if q := r.reqs.at(ev.ID); q.cur == ev.Arg {
			q.cur = 0
			r.failed(e, ev.ID, t, errNoAnswer)
		}
		if !r.armed {
			r.arm(e)
		}
	case msRetry:
		r.send(e, ev.ID, t)
	}
}

// slot returns a free call slot.
func (r *msRun) slot() int32 {
	if n := len(r.free); n > 0 {
		id := r.free[n-1]
		r.free = r.free[:n-1]
		return id
	}
	return r.reqs.add()
}

// send makes call id's next attempt at t: admitted by its policy, then
// refused by the server's limiter or queued.
func (r *msRun) send(e *engine.Engine, id int32, t time.Duration) {
	q := r.reqs.at(id)
	if err := q.call.Admit(context.Background()); err != nil {
		r.end(id, false)
		return
	}
	var tok limit.Token
	if r.lim != nil {
		var ok bool
		if tok, ok = r.lim.AcquirePriority(epoch.Add(t), limit.Normal); !ok {
			r.stats.refused++
			r.failed(e, id, t, errRefused)
			return
		}
	}
	r.serial++
	q.cur = r.serial
	r.stats.attempts[t/time.Second]++
	r.pending.push(msPending{due: t + r.m.timeout, serial: r.serial, req: id})
	if !r.armed {
		r.arm(e)
	}
	en := msEntry{at: t, serial: r.serial, req: id}
	if n := len(r.idle); n > 0 && r.queue.len() == 0 {
		w := r.idle[n-1]
		r.idle = r.idle[:n-1]
		r.start(e, w, en, tok, t)
		return
	}
	r.queue.push(en)
	if r.lim != nil {
		r.toks.push(tok)
	}
	r.stats.peak = max(r.stats.peak, r.queue.len())
}

// arm sets the timeout event for the first attempt of pending whose
// caller still waits for it, dropping those answered before it: every
// attempt has the same timeout, so the attempts reach it in the order
// they were sent, and one event at a time serves them all, without an
// event for each attempt answered in time (most of them).
func (r *msRun) arm(e *engine.Engine) {
	for r.pending.len() > 0 {
		h := r.pending.at(0)
		if r.reqs.at(h.req).cur == h.serial {
			e.At(h.due, msTimeout, h.req, h.serial)
			r.armed = true
			return
		}
		r.pending.pop()
	}
}

// failed tells call id's policy that its attempt failed with err at t,
// and makes the next attempt now or later, or ends the call.
func (r *msRun) failed(e *engine.Engine, id int32, t time.Duration, err error) {
	d := r.reqs.at(id).call.Done(epoch.Add(t), time.Time{}, err, e.Uint64())
	switch {
	case d.Reason != nil:
		r.end(id, false)
	case d.Delay <= 0:
		r.send(e, id, t)
	default:
		e.At(t+d.Delay, msRetry, id, 0)
	}
}

// end frees call id's slot; answered says whether it got its answer.
func (r *msRun) end(id int32, answered bool) {
	if !answered {
		r.stats.gaveUp++
	}
	*r.reqs.at(id) = msReq{}
	r.free = append(r.free, id)
}

// start has worker w serve en from t.
func (r *msRun) start(e *engine.Engine, w int32, en msEntry, tok limit.Token, t time.Duration) {
	r.work[w], r.wtok[w] = en, tok
	d := e.Exp(r.m.service)
	if t >= r.m.from && t < r.m.to {
		d = time.Duration(float64(d) / (1 - r.m.cut))
	}
	e.At(t+d, msServed, w, 0)
}

// finish ends worker w's request at t, answers its caller if the caller
// still waits, and takes the next request from the queue, dropping
// those whose caller has gone when the server sheds.
func (r *msRun) finish(e *engine.Engine, w int32, t time.Duration) {
	en := r.work[w]
	r.wtok[w].Served(epoch.Add(t))
	r.stats.served++
	if q := r.reqs.at(en.req); q.cur == en.serial {
		q.cur = 0
		q.call.Done(time.Time{}, time.Time{}, nil, 0)
		r.stats.good[t/time.Second]++
		r.end(en.req, true)
	} else {
		r.stats.wasted++
	}
	for r.queue.len() > 0 {
		next := r.queue.pop()
		var tok limit.Token
		if r.lim != nil {
			tok = r.toks.pop()
			if t >= next.at+r.m.timeout {
				tok.Dropped(epoch.Add(t))
				r.stats.shed++
				continue
			}
		}
		r.start(e, w, next, tok, t)
		return
	}
	r.idle = append(r.idle, w)
}

// ring is a FIFO queue that reuses its storage. Its length is a power of
// two, so that an index wraps with a mask rather than a division.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (q *ring[T]) len() int { return q.size }

// at returns the item i places from the head.
func (q *ring[T]) at(i int) T { return q.buf[(q.head+i)&(len(q.buf)-1)] }

func (q *ring[T]) push(v T) {
	if q.size == len(q.buf) {
		grown := make([]T, max(16, 2*len(q.buf)))
		n := copy(grown, q.buf[q.head:])
		copy(grown[n:], q.buf[:q.head])
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = v
	q.size++
}

func (q *ring[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return v
}
