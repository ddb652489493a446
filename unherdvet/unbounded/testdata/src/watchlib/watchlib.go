// Package watchlib stands for a client library that talks to the network
// itself and streams changes on a channel.
package watchlib

import (
	"context"
	"net"
)

// An Event is one change.
type Event struct{ Rev int64 }

// A Client talks to a key-value service.
type Client struct{ conn net.Conn }

// Watch streams the changes under key until the stream breaks or ctx
// ends, then closes the channel.
func (c *Client) Watch(ctx context.Context, key string) <-chan Event {
	ch := make(chan Event)
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}
