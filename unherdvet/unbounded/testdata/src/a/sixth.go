package a

import (
	"context"
	"fmt"
	"math/rand"
	"net"
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

type locator struct {
	addrs []string
	conn  net.Conn
}

func (l *locator) connect(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	l.conn = c
	return nil
}

// Positive: the connection tried again on an address drawn at random
// from the same list each round, until one answers: each address comes
// back round, for ever.
func (l *locator) reconnect() error {
	err := l.connect(l.addrs[0])
	for err != nil { // want `unbounded: retry loop has no attempt limit and no deadline`
		time.Sleep(time.Duration(rand.Intn(5000))*time.Millisecond + time.Second)
		r := rand.New(rand.NewSource(time.Now().UnixNano()))
		n := r.Intn(len(l.addrs))
		err = l.connect(l.addrs[n])
	}
	return nil
}

// Negative: a new name drawn at random each round until one is free: a
// search, which tries something new each time.
func (l *locator) claim() error {
	err := l.connect("node-0")
	for err != nil {
		name := fmt.Sprintf("node-%d", rand.Int())
		err = l.connect(name)
	}
	return nil
}
