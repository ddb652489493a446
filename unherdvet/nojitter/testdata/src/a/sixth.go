package a

import (
	"context"
	"log"
	"math/rand/v2"
	"time"

	"watchlib"
)

// Positive: a watch made again a constant second after its channel
// closes: every watcher of the service comes back at once after an
// outage.
func rewatch(c *watchlib.Client, key string, apply func(watchlib.Event)) {
	ch := c.Watch(context.Background(), key)
	for {
		for ev := range ch {
			apply(ev)
		}
		log.Print("watch stopped")
		time.Sleep(time.Second) // want `nojitter: retry loop waits a constant 1s between attempts`
		ch = c.Watch(context.Background(), key)
	}
}

// Positive: the same with the watch made at the top of the body, and a
// context that can stop it.
func rewatchTop(ctx context.Context, c *watchlib.Client, key string, apply func(watchlib.Event)) {
	for {
		ch := c.Watch(ctx, key)
		for ev := range ch {
			apply(ev)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second): // want `nojitter: retry loop waits a constant 2s between attempts`
		}
	}
}

// Negative: the wait after the drain is jittered.
func rewatchJittered(c *watchlib.Client, key string, apply func(watchlib.Event)) {
	ch := c.Watch(context.Background(), key)
	for {
		for ev := range ch {
			apply(ev)
		}
		time.Sleep(time.Second/2 + rand.N(time.Second))
		ch = c.Watch(context.Background(), key)
	}
}

// Negative: a channel of the package's own making, fed by nothing
// remote: a local fan-out drained round after round.
func drainLocal(jobs func() <-chan int, run func(int)) {
	for {
		ch := jobs()
		for j := range ch {
			run(j)
		}
		time.Sleep(time.Second)
	}
}

// Negative: a batch loop that asks for the next stream at once: a
// consumer moving on, not a retry.
func rewatchAtOnce(c *watchlib.Client, key string, apply func(watchlib.Event)) {
	for {
		for ev := range c.Watch(context.Background(), key) {
			apply(ev)
		}
	}
}
