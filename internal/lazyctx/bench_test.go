package lazyctx

import (
	"context"
	"testing"
	"time"
)

// The benchmarks make and end one context per op under a cancellable
// parent, next to the standard library's equivalent. The watched twins
// read Done once, as I/O on the context does; the others never do, as an
// attempt that answers from memory does not.

func BenchmarkWithCancel(b *testing.B) {
	benchContexts(b,
		func(b *testing.B, parent context.Context, watched bool) {
			ctx, cancel := context.WithCancelCause(parent)
			if watched {
				watch(b, ctx)
			}
			cancel(nil)
		},
		func(b *testing.B, parent context.Context, watched bool) {
			ctx := WithCancel(parent)
			if watched {
				watch(b, ctx)
			}
			ctx.Cancel(nil)
		})
}

// BenchmarkWithTimeout compares WithTimeout then Detach (a successful
// attempt) with context.WithTimeout then its cancel, the closest the
// standard library has.
func BenchmarkWithTimeout(b *testing.B) {
	benchContexts(b,
		func(b *testing.B, parent context.Context, watched bool) {
			ctx, cancel := context.WithTimeout(parent, time.Second)
			if watched {
				watch(b, ctx)
			}
			cancel()
		},
		func(b *testing.B, parent context.Context, watched bool) {
			ctx := WithTimeout(parent, time.Second, nil)
			if watched {
				watch(b, ctx)
			}
			ctx.Detach()
		})
}

// benchContexts runs one op of the standard library's way (std) and of
// lazyctx's (lazy) per iteration, under a cancellable parent, unwatched
// and watched.
func benchContexts(b *testing.B, std, lazy func(b *testing.B, parent context.Context, watched bool)) {
	for _, watched := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "-watched"}[watched]
		for _, c := range []struct {
			name string
			op   func(*testing.B, context.Context, bool)
		}{{"context", std}, {"lazyctx", lazy}} {
			b.Run(c.name+suffix, func(b *testing.B) {
				b.ReportAllocs()
				parent, cancel := context.WithCancel(context.Background())
				defer cancel()
				for b.Loop() {
					c.op(b, parent, watched)
				}
			})
		}
	}
}

// watch reads ctx's Done channel once, as a call about to do I/O does.
func watch(b *testing.B, ctx context.Context) {
	select {
	case <-ctx.Done():
		b.Fatal("context ended")
	default:
	}
}
