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
	for _, watched := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "-watched"}[watched]
		b.Run("context"+suffix, func(b *testing.B) {
			b.ReportAllocs()
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			for b.Loop() {
				ctx, cancel := context.WithCancelCause(parent)
				if watched {
					watch(b, ctx)
				}
				cancel(nil)
			}
		})
		b.Run("lazyctx"+suffix, func(b *testing.B) {
			b.ReportAllocs()
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			for b.Loop() {
				ctx := WithCancel(parent)
				if watched {
					watch(b, ctx)
				}
				ctx.Cancel(nil)
			}
		})
	}
}

// BenchmarkWithTimeout compares WithTimeout then Detach (a successful
// attempt) with context.WithTimeout then its cancel, the closest the
// standard library has.
func BenchmarkWithTimeout(b *testing.B) {
	for _, watched := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "-watched"}[watched]
		b.Run("context"+suffix, func(b *testing.B) {
			b.ReportAllocs()
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(parent, time.Second)
				if watched {
					watch(b, ctx)
				}
				cancel()
			}
		})
		b.Run("lazyctx"+suffix, func(b *testing.B) {
			b.ReportAllocs()
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			for b.Loop() {
				ctx := WithTimeout(parent, time.Second, nil)
				if watched {
					watch(b, ctx)
				}
				ctx.Detach()
			}
		})
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
