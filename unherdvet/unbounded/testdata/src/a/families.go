package a

import (
	"context"
	"net"
	"time"
)

func dialReplica() (net.Conn, error) { return nil, nil }
func replicate(c net.Conn) error     { return nil }

// Positive: a replication stream that resyncs every second, for ever.
func resync() {
	for { // want `unbounded: reconnect loop has nothing that stops it`
		c, err := dialReplica()
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		_ = replicate(c)
	}
}

// Positive: an IRC-style redial whose wait grows linearly.
func redial() {
	wait := time.Duration(0)
	for { // want `unbounded: reconnect loop has nothing that stops it`
		c, err := dialReplica()
		if err != nil {
			wait += 10 * time.Second
			time.Sleep(wait)
			continue
		}
		wait = 0
		_ = replicate(c)
	}
}

// Negative: the same resubscribe loop ends when its context is done.
func resubscribeCtx(ctx context.Context, sub func(context.Context) error) {
	d := time.Second
	for {
		if err := sub(ctx); err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
			d *= 2
			continue
		}
		d = time.Second
	}
}
