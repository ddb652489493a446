package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/unherd/unherd/retry"
)

// BenchmarkDoAttemptTimeout is a first-attempt success under a 1 s
// attempt timeout, with a cancellable caller context: the attempt's
// context, which the attempt never looks at, is the whole cost over
// BenchmarkDoSuccess. BenchmarkDoAttemptTimeoutWatched is the same with an
// attempt that reads its Done channel once, as one that does I/O does,
// which sets up the context's timer and its link to the caller's context.
func BenchmarkDoAttemptTimeout(b *testing.B) {
	benchAttemptTimeout(b, func(context.Context) error { return nil })
}

// BenchmarkDoAttemptTimeoutWatched: see BenchmarkDoAttemptTimeout.
func BenchmarkDoAttemptTimeoutWatched(b *testing.B) {
	benchAttemptTimeout(b, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
			return nil
		}
	})
}

func benchAttemptTimeout(b *testing.B, op func(context.Context) error) {
	b.ReportAllocs()
	p, err := retry.New(retry.Config{AttemptTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for b.Loop() {
		if err := p.Do(ctx, op); err != nil {
			b.Fatal(err)
		}
	}
}
