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
