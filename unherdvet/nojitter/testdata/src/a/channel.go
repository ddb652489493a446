package a

import (
	"context"
	"math/rand/v2"
	"time"
)

type dispatcher struct {
	stop    chan struct{}
	trigger chan struct{}
	backoff time.Duration
	ctx     context.Context
}

func (d *dispatcher) dispatch() error { _, err := get(d.ctx); return err }

// redispatch asks the loop for another round, unless one is pending.
func (d *dispatcher) redispatch() {
	select {
	case d.trigger <- struct{}{}:
	default:
	}
}

// Positive: a failed dispatch triggers another round, which arms a
// timer for a fixed backoff and dispatches again when it fires.
func (d *dispatcher) run() {
	var retry <-chan time.Time
	for {
		select {
		case <-d.stop:
			return
		case <-d.trigger:
			retry = time.After(d.backoff) // want `nojitter: retry loop waits the same delay \(d.backoff\)`
		case <-retry:
			retry = nil
			if err := d.dispatch(); err != nil {
				d.redispatch()
			}
		}
	}
}

type message struct{ body string }

func send(ctx context.Context, m message) error { return nil }

// Positive: a failed send goes back on the channel the loop ranges over,
// from a goroutine that waits a constant delay first.
func resend(ctx context.Context, in chan message) {
	for m := range in {
		if err := send(ctx, m); err != nil {
			go func() {
				time.Sleep(2 * time.Second) // want `nojitter: retry loop waits a constant 2s between attempts`
				in <- m
			}()
		}
	}
}

// Positive: the same with a timer callback.
func resendLater(ctx context.Context, in chan message) {
	for m := range in {
		if err := send(ctx, m); err != nil {
			time.AfterFunc(time.Second, func() { in <- m }) // want `nojitter: retry loop waits a constant 1s between attempts`
		}
	}
}

// Negative: the goroutine waits a jittered delay.
func resendJittered(ctx context.Context, in chan message) {
	for m := range in {
		if err := send(ctx, m); err != nil {
			go func() {
				time.Sleep(time.Second/2 + rand.N(time.Second))
				in <- m
			}()
		}
	}
}

// Negative: a failed message goes to a dead-letter channel, which this
// loop does not read.
func deadLetter(ctx context.Context, in, dead chan message) {
	for m := range in {
		if err := send(ctx, m); err != nil {
			time.Sleep(time.Second)
			dead <- m
		}
	}
}

// Negative: a failure is reported on a channel the loop also reads, but
// nothing is tried again from it.
func (d *dispatcher) report(events chan error) {
	for {
		select {
		case <-d.stop:
			return
		case err := <-events:
			_ = err
		case <-time.After(time.Minute):
			if err := d.dispatch(); err != nil {
				events <- err
			}
		}
	}
}
