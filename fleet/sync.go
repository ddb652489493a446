package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/unherd/unherd/internal/pause"
)

// ErrUnreachable is wrapped by the error of a sync that failed or timed
// out; the budget then falls back to its local budget.
var ErrUnreachable = errors.New("fleet: ledger unreachable")

// ErrStopped is the error OnState receives when Run returns: the budget
// answers from its fallback from then on.
var ErrStopped = errors.New("fleet: budget stopped")

// Report returns what the next sync sends, at the instant now. A driver
// that does its own round trips (the simulator) calls Report, carries the
// report to the ledger, and calls Settle with the answer; Report and
// Settle alternate. Sync does all three.
func (b *Budget) Report(now time.Time) Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	total := b.requests.Load()
	delta := total - b.acked
	b.sentLocal = b.local.Load()
	spent := b.sentLocal
	var span time.Duration
	if !b.lastOK.IsZero() {
		span = min(now.Sub(b.lastOK), b.window)
		if gap := now.Sub(b.lastOK); gap > b.window {
			// Requests counted while the ledger was away are spread over
			// that time: book only the window's share of them, and of
			// the retries the fallback allowed.
			delta = int64(float64(delta) * float64(b.window) / float64(gap))
			spent = int64(math.Ceil(float64(spent) * float64(b.window) / float64(gap)))
		}
	}
	tokens := b.tokens.Load()
	short := b.short.Swap(0)
	want := b.want
	if State(b.state.Load()) == Shared {
		// Ask for twice what the last interval used or was refused, so
		// that the lease lasts until the next sync, but no more than the
		// pacer can spend by then: a lease is counted against the fleet
		// until it is returned, so tokens held and not spent are retries
		// the rest of the fleet is refused.
		rate, pace := b.paceNow()
		if b.pace.params.Load().cap < 1 {
			// A slow process, paced by its lease: it asks for its pace
			// over one interval, divided by the share of the intervals
			// between its syncs in which a request came (the chance
			// that it can spend a token before it returns it), the
			// fraction of a token drawn, and spends what it
			// gets without the pacer (see WithdrawAt), so that a fleet of
			// slow processes does not hold a token each (counted against
			// the fleet) and spend none.
			x := pace * b.interval.Seconds()
			if rate > 0 && b.hits > 0 {
				x /= b.hits
			}
			want = int64(x)
			if b.draw() < x-float64(want) {
				want++
			}
			want = min(want, b.maxLease)
		} else {
			want = min(max(2*(b.afterGrant-tokens+short), 1), int64(math.Ceil(pace*(b.interval+b.interval/10+b.timeout).Seconds()))+1, b.maxLease)
		}
	}
	return Report{ID: b.id, Requests: total, Delta: delta, Returned: max(tokens, 0), Spent: spent, Span: span, Want: want, Limits: b.limits}
}

// Settle applies the outcome of the sync that sent r, at the instant now:
// the grant g when err is nil, a failure otherwise. A success takes the
// budget to Shared, a failure to Fallback; OnState hears of each change.
func (b *Budget) Settle(now time.Time, r Report, g Grant, err error) {
	b.mu.Lock()
	b.syncs++
	old := State(b.state.Load())
	if err != nil {
		b.repace(now, nil)
		b.lowWater.Store(math.MinInt64)
		b.state.Store(int32(Fallback))
		b.mu.Unlock()
		if old != Fallback && b.onState != nil {
			b.onState(Fallback, err)
		}
		return
	}
	// Tokens taken since Report came out of the returned lease; they
	// are now owed by the new one.
	b.tokens.Add(g.Tokens - r.Returned)
	b.local.Add(-b.sentLocal)
	b.sentLocal = 0
	b.acked, b.lastOK = r.Requests, now
	b.book(now, r.Delta)
	b.repace(now, &g)
	b.afterGrant = b.tokens.Load()
	b.fleetReq, b.fleetRet = g.Requests, g.Retries
	b.want = r.Want
	if b.pace.params.Load().cap < 1 {
		// A slow process: its lease is its pace; no early sync.
		b.lowWater.Store(math.MinInt64)
		b.starved.Store(false)
	} else if g.Tokens >= r.Want {
		// A quarter of the lease left, or none (a lease of 1 to 3), wakes
		// Run for an early sync.
		b.lowWater.Store(g.Tokens / 4)
		b.starved.Store(false)
	} else {
		// The fleet is short of retries: a Withdraw that finds the lease
		// empty wakes Run, for the tokens the rest of the fleet returns
		// or the window frees meanwhile, but at most four times an
		// interval, so that a starved fleet does not sync ten times as
		// often.
		b.lowWater.Store(0)
		b.starved.Store(true)
	}
	b.woken.Store(false)
	b.state.Store(int32(Shared))
	b.mu.Unlock()
	if old != Shared && b.onState != nil {
		b.onState(Shared, nil)
	}
}

// paceNow returns the process's rate of requests and its pacer's rate,
// in retries per second (Ratio times the rate of requests, plus the
// process's share of the floor), as of the last sync. The rate of
// requests is their mean since the first sync, over the first window,
// and then a moving average over about a window. b.mu is held.
func (b *Budget) paceNow() (requests, pace float64) {
	return b.reqRate, b.ratio*b.reqRate + b.floorShare
}

// measure folds the requests counted since the last sync into the rate of
// requests, and whether any came into the share of syncs after which one
// had, at the instant t (unix ns) with r requests counted. b.mu is
// held.
func (b *Budget) measure(t, r int64) {
	dt := t - b.paceAt
	if dt <= 0 {
		return
	}
	inst := float64(r-b.paceReq) * 1e9 / float64(dt)
	w := min(1, float64(dt)/float64(b.window))
	if b.rateAge < b.window {
		w = float64(dt) / float64(b.rateAge+time.Duration(dt))
	}
	b.rateAge += time.Duration(dt)
	b.reqRate += (inst - b.reqRate) * w
	hit := 0.0
	if r > b.paceReq {
		hit = 1
	}
	b.hits += (hit - b.hits) * w
	b.paceAt, b.paceReq = t, r
}

// jittered is the interval drawn uniformly from 90% to 110% of
// SyncInterval, so that processes started together do not sync together.
func (b *Budget) jittered() time.Duration {
	return b.interval - b.interval/10 + time.Duration(b.rand()%uint64(b.interval/5+1))
}

// book notes that the ledger booked n of this process's requests at now,
// for the process's share of the fleet's requests. b.mu is held.
func (b *Budget) book(now time.Time, n int64) {
	idx := now.UnixNano() / int64(b.limits.Slot)
	s := &b.booked[idx%Slots]
	if s.idx != idx {
		*s = bookedSlot{idx: idx}
	}
	s.n += n
}

// repace sets the pacer's rates at a sync, at now: Ratio credits a
// request, and the process's share of the fleet's floor, which a
// successful sync (g) measures as the process's share of the fleet's
// requests in the window, and a failed one (nil) keeps. The cap is what
// the process earned in a hundredth of the window at the rate of the
// requests since the last sync, at least one request's Ratio. b.mu is
// held.
func (b *Budget) repace(now time.Time, g *Grant) {
	t, r := now.UnixNano(), b.requests.Load()
	if g != nil {
		if g.Requests <= 0 {
			b.floorShare = b.floor
		} else {
			cur := t / int64(b.limits.Slot)
			var mine int64
			for _, s := range b.booked {
				if s.idx > cur-Slots && s.idx <= cur {
					mine += s.n
				}
			}
			b.floorShare = b.floor * min(1, float64(mine)/float64(g.Requests))
		}
	}
	b.measure(t, r)
	_, pace := b.paceNow()
	b.pace.set(t, r, b.ratio, b.floorShare, max(pace*b.span.Seconds(), b.ratio))
}

// MinCallsPerSync is how many requests a process records between two
// syncs before Run syncs on the interval; see Run.
const MinCallsPerSync = 200

// due reports whether a sync on the interval should run, since after the
// last one.
func (b *Budget) due(since time.Duration) bool {
	if State(b.state.Load()) != Shared || b.short.Load() > 0 || since+b.interval > b.window/2-b.timeout {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests.Load()-b.acked >= MinCallsPerSync
}

// Sync reports to the ledger and leases new tokens, waiting at most the
// configured Timeout. Its error wraps ErrUnreachable. When ctx itself is
// done, the budget's state does not change. Concurrent Syncs run one
// after the other.
func (b *Budget) Sync(ctx context.Context) error {
	b.syncing.Lock()
	defer b.syncing.Unlock()
	r := b.Report(b.now())
	sctx, cancel := context.WithTimeout(ctx, b.timeout)
	b.inflight.Store(true)
	g, err := b.t.Sync(sctx, r)
	b.inflight.Store(false)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err = fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	b.Settle(b.now(), r, g, err)
	return err
}

// Run syncs at once, then every SyncInterval (drawn from 90% to 110% of
// it each time, with math/rand/v2) and whenever the lease runs
// low (at most ten times per interval), until ctx is done. A process that
// made fewer than MinCallsPerSync calls since its last sync, and was
// refused no retry, skips syncs, up to half the window less the timeout:
// a quiet process costs the ledger less than a round trip per
// MinCallsPerSync calls where it can. Run it in a goroutine of its own,
// one per budget.
//
// When ctx is done, the budget goes to Fallback for good (OnState gets
// ErrStopped), since nothing renews its lease any more, and Run gives the
// unused lease back to the ledger in a last sync bounded by Timeout
// before it returns.
func (b *Budget) Run(ctx context.Context) {
	defer b.stop()
	tick := time.NewTimer(0)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !b.due(time.Since(last)) {
				tick.Reset(b.jittered())
				continue
			}
		case <-b.wake:
			least := b.interval / 10
			if b.starved.Load() {
				least = b.interval / 4
			}
			if gap := least - time.Since(last); gap > 0 && !pause.For(ctx, gap) {
				return
			}
		}
		last = time.Now()
		_ = b.Sync(ctx)
		tick.Reset(b.jittered())
	}
}

// stop takes the budget to Fallback and returns its lease.
func (b *Budget) stop() {
	b.syncing.Lock()
	defer b.syncing.Unlock()
	b.mu.Lock()
	old := State(b.state.Load())
	b.lowWater.Store(math.MinInt64)
	b.state.Store(int32(Fallback))
	b.mu.Unlock()
	if old != Fallback && b.onState != nil {
		b.onState(Fallback, ErrStopped)
	}
	r := b.Report(b.now())
	if r.Returned == 0 && r.Spent == 0 {
		return
	}
	r.Want = 0
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if _, err := b.t.Sync(ctx, r); err == nil {
		b.mu.Lock()
		b.tokens.Add(-r.Returned)
		b.local.Add(-b.sentLocal)
		b.sentLocal = 0
		b.acked = r.Requests
		b.mu.Unlock()
	}
}
