package a

import (
	"context"
	"time"

	"watchlib"
)

// Positive: a watch made again after its channel closes, with nothing
// that stops it: context.Background, no stop channel, no flag.
func rewatch(c *watchlib.Client, key string, apply func(watchlib.Event)) {
	ch := c.Watch(context.Background(), key)
	for { // want `unbounded: reconnect loop has nothing that stops it`
		for ev := range ch {
			apply(ev)
		}
		time.Sleep(time.Second)
		ch = c.Watch(context.Background(), key)
	}
}

// Negative: the caller's context ends it.
func rewatchCtx(ctx context.Context, c *watchlib.Client, key string, apply func(watchlib.Event)) {
	for {
		ch := c.Watch(ctx, key)
		for ev := range ch {
			apply(ev)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// Negative: a stop channel checked after the drain ends it.
func rewatchStop(c *watchlib.Client, key string, stop <-chan struct{}, apply func(watchlib.Event)) {
	ch := c.Watch(context.Background(), key)
	for {
		for ev := range ch {
			apply(ev)
		}
		select {
		case <-stop:
			return
		default:
		}
		time.Sleep(time.Second)
		ch = c.Watch(context.Background(), key)
	}
}
