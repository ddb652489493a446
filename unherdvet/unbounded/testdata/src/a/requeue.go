package a

import (
	"context"
	"time"
)

type write struct {
	fn func(ctx context.Context) error
}

// Positive: the failed writes are tried again every second, for ever.
func retryWrites(ctx context.Context, pending []write) {
	for { // want `unbounded: retry loop has no attempt limit and no deadline`
		time.Sleep(time.Second)
		var failed []write
		for _, w := range pending {
			if err := w.fn(ctx); err != nil {
				failed = append(failed, w)
			}
		}
		pending = failed
	}
}

// Negative: the same, until the context is done.
func retryWritesUntil(ctx context.Context, pending []write) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		var failed []write
		for _, w := range pending {
			if err := w.fn(ctx); err != nil {
				failed = append(failed, w)
			}
		}
		pending = failed
	}
}
