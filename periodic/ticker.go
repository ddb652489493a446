package periodic

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Ticker delivers the ticks of a Schedule on a channel, as time.Ticker
// does for a fixed period. It is safe for concurrent use.
type Ticker struct {
	// C receives each tick's scheduled time. A tick is dropped, not
	// queued, while the previous one has not been received (as with
	// time.Ticker), and its slot is skipped. C is closed once the ticker
	// has stopped, so `for t := range tk.C` ends by itself.
	C <-chan time.Time

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// NewTicker starts a ticker for s, anchored now. It stops when ctx is done
// or Stop is called, whichever comes first; its goroutine never outlives
// that. It returns an error wrapping ErrInvalid if s does not validate.
func NewTicker(ctx context.Context, s Schedule) (*Ticker, error) {
	start := time.Now()
	q, err := NewSeries(s, start)
	if err != nil {
		return nil, err
	}
	c := make(chan time.Time, 1)
	t := &Ticker{C: c, stop: make(chan struct{}), done: make(chan struct{})}
	go t.loop(ctx, q, q.Next(start, draws(s)()), draws(s), c)
	return t, nil
}

// Stop stops the ticker and waits for its goroutine to end; C is closed
// when Stop returns. Stop may be called more than once, from any
// goroutine.
func (t *Ticker) Stop() {
	t.stopOnce.Do(func() { close(t.stop) })
	<-t.done
}

// loop delivers next and the ticks after it.
func (t *Ticker) loop(ctx context.Context, q *Series, next time.Time, draw func() uint64, c chan<- time.Time) {
	defer close(t.done)
	defer close(c)
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.stop:
			return
		case <-timer.C:
			select {
			case c <- next:
			default: // the receiver is busy: drop the tick, like time.Ticker
			}
			next = q.Next(time.Now(), draw())
			timer.Reset(time.Until(next))
		}
	}
}

// Run calls job at every tick of s, anchored now, until ctx is done, and
// then returns ctx's error. job runs on the calling goroutine, one run at
// a time, with ctx and the tick's scheduled time; ticks that pass while
// it runs are skipped, so a slow job delays nothing but its own slots.
// Run starts no goroutine. It returns an error wrapping ErrInvalid at once
// if s does not validate.
func Run(ctx context.Context, s Schedule, job func(ctx context.Context, tick time.Time)) error {
	now := time.Now()
	q, err := NewSeries(s, now)
	if err != nil {
		return err
	}
	draw := draws(s)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// The first tick is asked for at the start instant itself, so that
		// a tick due at once (no jitter) is not skipped as past.
		next := q.Next(now, draw())
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		job(ctx, next)
		now = time.Now()
	}
}

// draws returns s's random source.
func draws(s Schedule) func() uint64 {
	if s.Rand != nil {
		return s.Rand
	}
	return rand.Uint64
}
