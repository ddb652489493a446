package fleet

import (
	"context"
	"math"
	"sync"
	"time"
)

// Limits are the fleet-wide limits a sync carries to the ledger, so that
// the ledger itself keeps no configuration. Every process of one budget
// sends the same Limits.
type Limits struct {
	// Ratio is the most retries granted per request counted in the window.
	Ratio float64
	// Reserve is the fleet-wide floor: retries granted per window whatever
	// the traffic (MinPerSecond * Window seconds).
	Reserve float64
	// Slot is the step in which the window slides; the window is Slots
	// slots long. Slot is a whole number of milliseconds, because the
	// Redis ledger counts time in milliseconds.
	Slot time.Duration
	// Slots is how many slots the window holds.
	Slots int
}

// Report is what one process sends the ledger at a sync.
type Report struct {
	// ID names the process (the budget object) in the ledger.
	ID string
	// Requests is the process's cumulative count of requests (first
	// attempts). The ledger remembers the last count it booked for ID, so
	// that a report sent again after a lost answer is not counted twice.
	Requests int64
	// Delta is how many requests to book: the requests since the last
	// sync that the process knows succeeded, fewer if that sync is older
	// than the window (the requests of an outage are spread over it).
	Delta int64
	// Returned is the unused part of the process's current lease, which
	// the ledger un-books before it grants the new one.
	Returned int64
	// Spent is how many retries the process made outside any lease (from
	// its fallback, while the ledger was unreachable) since the last sync
	// it knows succeeded, fewer if that sync is older than the window
	// (spread like Delta). The ledger books them as retries in the
	// current slot, before it grants. A report sent again after a lost
	// answer books them again: the error is on the safe side.
	Spent int64
	// Span is the time over which Delta's requests and Spent's retries
	// were counted: since the last sync the process knows succeeded, at
	// most the window. The ledger books them evenly over the slots of
	// that span, the current one included, so that they leave the window
	// as they came. Zero books them in the current slot.
	Span time.Duration
	// Want is how many retry tokens the process asks for.
	Want int64
	// Limits are the budget's limits.
	Limits Limits
}

// Grant is the ledger's answer to a Report.
type Grant struct {
	// Tokens is the new lease: how many retries the process may make
	// until its next sync. It replaces the lease the report returned.
	Tokens int64
	// Requests and Retries are the fleet's requests and granted retries
	// in the window after this sync (leases count as retries when they
	// are granted).
	Requests, Retries int64
}

// Transport carries a Report to the shared ledger and brings back its
// Grant. unherdredis implements it on Redis; a [Ledger] implements it in
// memory. Sync must return when ctx is done.
type Transport interface {
	Sync(ctx context.Context, r Report) (Grant, error)
}

// Ledger is the fleet's shared accounting in memory: the same arithmetic
// as the Redis ledger's script, for one process's tests, for the
// simulator, and as the reference the Redis ledger is tested against.
//
// The window counts the requests reported and the retry tokens granted,
// per slot. A sync books the report's requests in the current slot,
// un-books the returned tokens from the slot the lease was granted in (if
// that slot is still in the window), books the report's spent retries
// like its requests, spread over the slots of its Span, and grants
// min(Want, floor(Ratio*requests + Reserve - retries)), at least zero,
// booked in the current slot. A lease is remembered for one window and
// forgotten after two, so a process that dies loses its unused lease
// only: its tokens stay booked until they leave the window.
//
// A Ledger is safe for concurrent use. The zero value is not usable; call
// NewLedger.
type Ledger struct {
	now func() time.Time

	mu     sync.Mutex
	slots  []slot
	width  int64 // slot width, ns
	leases map[string]lease
	swept  int64 // slot index of the last sweep of leases
}

type slot struct {
	idx           int64
	requests, ret int64
}

type lease struct {
	slot, granted, requests int64
}

// NewLedger returns an empty ledger reading time from now (nil means
// time.Now).
func NewLedger(now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{now: now, leases: map[string]lease{}}
}

// Sync is SyncAt at the ledger clock's now. It never fails.
func (l *Ledger) Sync(ctx context.Context, r Report) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	return l.SyncAt(l.now(), r), nil
}

// SyncAt applies r at the instant now and returns the grant.
func (l *Ledger) SyncAt(now time.Time, r Report) Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := int64(max(r.Limits.Slots, 1))
	width := max(int64(r.Limits.Slot), 1)
	if l.slots == nil || l.width != width || int64(len(l.slots)) != n {
		l.slots, l.width = make([]slot, n), width
		for i := range l.slots {
			l.slots[i].idx = math.MinInt64
		}
	}
	cur := now.UnixNano() / width
	low := cur - n + 1
	var req, ret int64
	for _, s := range l.slots {
		if s.idx >= low && s.idx <= cur {
			req += s.requests
			ret += s.ret
		}
	}
	booked := r.Delta
	if ls, ok := l.leases[r.ID]; ok && ls.slot >= cur-2*n+1 {
		if back := min(r.Returned, ls.granted); ls.slot >= low && back > 0 {
			l.at(ls.slot).ret -= back
			ret -= back
		}
		booked = min(booked, max(0, r.Requests-ls.requests))
	}
	k := min(max(int64(r.Span)/width, 1), n)
	for i := cur - k + 1; i <= cur; i++ {
		// An even share of each in every slot of the span; the
		// remainders in the current one.
		q, s := booked/k, max(r.Spent, 0)/k
		if i == cur {
			q, s = booked-q*(k-1), max(r.Spent, 0)-s*(k-1)
		}
		if q > 0 {
			l.at(i).requests += q
			req += q
		}
		if s > 0 {
			l.at(i).ret += s
			ret += s
		}
	}
	g := max(0, min(r.Want, int64(math.Floor(r.Limits.Ratio*float64(req)+r.Limits.Reserve-float64(ret)))))
	if g > 0 {
		l.at(cur).ret += g
		ret += g
	}
	l.leases[r.ID] = lease{slot: cur, granted: g, requests: r.Requests}
	if cur-l.swept >= n {
		// Forget the leases of processes silent for two windows: the
		// same lifetime as the Redis lease key's expiry.
		for id, ls := range l.leases {
			if ls.slot < cur-2*n+1 {
				delete(l.leases, id)
			}
		}
		l.swept = cur
	}
	return Grant{Tokens: g, Requests: req, Retries: ret}
}

// at returns the slot of index i, clearing it if it held an older one.
func (l *Ledger) at(i int64) *slot {
	n := int64(len(l.slots))
	s := &l.slots[((i%n)+n)%n]
	if s.idx != i {
		*s = slot{idx: i}
	}
	return s
}
