package limit

import (
	"testing"
	"time"
)

// benchParallel acquires and releases a served token from many
// goroutines, with a limit high enough never to refuse.
func benchParallel(b *testing.B, alg Algorithm) {
	l, err := New(Config{Algorithm: alg})
	if err != nil {
		b.Fatal(err)
	}
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
	a, err := NewAIMD(AIMDConfig{InitialLimit: 1 << 20, MaxLimit: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	benchParallel(b, a)
}

// BenchmarkGradient2Parallel: every served release updates Gradient2
// under the limiter's mutex.
func BenchmarkGradient2Parallel(b *testing.B) {
	g, err := NewGradient2(Gradient2Config{InitialLimit: 1 << 20, MinLimit: 1 << 20, MaxLimit: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	benchParallel(b, g)
}

// BenchmarkGradient2Serial: one goroutine, the uncontended cost.
func BenchmarkGradient2Serial(b *testing.B) {
	l, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
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
