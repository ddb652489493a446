package limit

import (
	"testing"
	"time"

	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/guardtest"
)

// benchParallel acquires and releases a served token from many
// goroutines, with a limit high enough never to refuse.
func benchParallel(b *testing.B, alg Algorithm) {
	l := mustNew(b, Config{Algorithm: alg})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := epoch
		for pb.Next() {
			tok, ok := l.Acquire(now)
			if !ok {
				continue
			}
			now = now.Add(time.Millisecond)
			tok.Served(now)
		}
	})
}

// BenchmarkFixedParallel: the bulkhead, no algorithm update on release.
func BenchmarkFixedParallel(b *testing.B) { benchParallel(b, Fixed(1<<30)) }

// BenchmarkAIMDParallel: every served release updates AIMD under the
// limiter's mutex.
func BenchmarkAIMDParallel(b *testing.B) {
	a := configtest.Must(NewAIMD(AIMDConfig{InitialLimit: 1 << 20, MaxLimit: 1 << 20}))(b)
	benchParallel(b, a)
}

// BenchmarkGradient2Parallel: every served release updates Gradient2
// under the limiter's mutex.
func BenchmarkGradient2Parallel(b *testing.B) {
	g := configtest.Must(NewGradient2(Gradient2Config{InitialLimit: 1 << 20, MinLimit: 1 << 20, MaxLimit: 1 << 20}))(b)
	benchParallel(b, g)
}

// BenchmarkDefaultSerial: the default algorithm (Gradient), one
// goroutine, the uncontended cost.
func BenchmarkDefaultSerial(b *testing.B) {
	l := mustNew(b, Config{})
	b.ReportAllocs()
	now := epoch
	for b.Loop() {
		tok, ok := l.Acquire(now)
		now = now.Add(time.Millisecond)
		if ok {
			tok.Served(now)
		}
	}
}

// BenchmarkAcquirePriorityParallel: the fast path with priorities, every
// priority in turn, a limit high enough never to refuse.
func BenchmarkAcquirePriorityParallel(b *testing.B) {
	l := mustNew(b, Config{Algorithm: Fixed(1 << 30)})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		p := Normal
		for pb.Next() {
			tok, ok := l.AcquirePriority(epoch, p)
			if !ok {
				b.Error("refused")
				return
			}
			tok.Served(epoch)
			p = (p + 1) % 3
		}
	})
}

// BenchmarkWaitParallel: Wait when a slot is free (no waiters): a
// context check, a clock read and AcquirePriority.
func BenchmarkWaitParallel(b *testing.B) {
	l := mustNew(b, Config{Algorithm: Fixed(1 << 30), MaxWait: time.Second})
	ctx := b.Context()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok, err := l.Wait(ctx, Normal)
			if err != nil {
				b.Error(err)
				return
			}
			tok.Served(epoch)
		}
	})
}

// BenchmarkWaitQueued: many goroutines over a limit of 4, so most wait
// in the queue and every release hands its slot over: the slow path.
func BenchmarkWaitQueued(b *testing.B) {
	l := mustNew(b, Config{Algorithm: Fixed(4), MaxWait: time.Second, CongestedWait: time.Second, MaxWaiters: 1 << 20})
	ctx := b.Context()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok, err := l.Wait(ctx, Normal)
			if err != nil {
				continue
			}
			tok.Served(epoch)
		}
	})
}

// BenchmarkGuardParallel: the guard as the retry loop drives it, with
// successes.
func BenchmarkGuardParallel(b *testing.B) {
	l := mustNew(b, Config{Algorithm: Fixed(1 << 30)})
	guardtest.Parallel(b, l.Guard(), guardtest.Success, false)
}
