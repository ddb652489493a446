package a

import (
	"context"
	"math/rand/v2"
	"time"
)

// Positive: each round tries every server once, then waits a constant
// delay and starts over.
func connectAny(ctx context.Context, addrs []string) (int, error) {
	for {
		for _, addr := range addrs {
			n, err := dialCtx(ctx, addr)
			if err != nil {
				continue
			}
			return n, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(5 * time.Second): // want `nojitter: retry loop waits a constant 5s between attempts`
		}
	}
}

// Negative: the same with a jittered wait.
func connectAnyJittered(ctx context.Context, addrs []string) (int, error) {
	for {
		for _, addr := range addrs {
			n, err := dialCtx(ctx, addr)
			if err == nil {
				return n, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second + rand.N(time.Second)):
		}
	}
}

// Negative: one pass over the servers, then give up.
func connectOnce(ctx context.Context, addrs []string) (int, error) {
	for _, addr := range addrs {
		n, err := dialCtx(ctx, addr)
		if err == nil {
			return n, nil
		}
		time.Sleep(time.Second)
	}
	return 0, context.DeadlineExceeded
}

func dialCtx(ctx context.Context, addr string) (int, error) { return 0, nil }

type rpcClient struct{ servers []string }

func (r *rpcClient) isShutdown() bool                        { return false }
func (r *rpcClient) nextServer() string                      { return r.servers[0] }
func (r *rpcClient) connect(addr string) (*rpcClient, error) { return r, nil }

// Positive: until shutdown, connect to the next server of the list and
// wait between tries: the list is gone round again and again.
func (r *rpcClient) reconnect() {
	turns := 0
	for !r.isShutdown() {
		addr := r.nextServer()
		c, err := r.connect(addr)
		if c != nil && err == nil {
			return
		}
		turns++
		time.Sleep(time.Duration(min(turns, 50)*100) * time.Millisecond) // want `nojitter: retry loop's delay grows without jitter`
	}
}

// Negative: three tries, each on the next server.
func (r *rpcClient) connectAny() {
	for i := 0; i < 3; i++ {
		addr := r.nextServer()
		c, err := r.connect(addr)
		if c != nil && err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
