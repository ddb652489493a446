package timeout

import (
	"testing"
	"time"
)

// BenchmarkAttemptTimeout is the retry loop's per-attempt read.
func BenchmarkAttemptTimeout(b *testing.B) {
	b.ReportAllocs()
	a := mustNew(b, Config{})
	for i := range 8192 {
		a.Observe(time.Duration(10+i%10)*time.Millisecond, true)
	}
	for b.Loop() {
		if a.AttemptTimeout() <= 0 {
			b.Fatal("no timeout")
		}
	}
}

// BenchmarkObserveParallel is the retry loop's per-attempt report, from
// every core.
func BenchmarkObserveParallel(b *testing.B) {
	b.ReportAllocs()
	a := mustNew(b, Config{})
	b.RunParallel(func(pb *testing.PB) {
		d := 10 * time.Millisecond
		for pb.Next() {
			a.Observe(d, true)
			d += time.Microsecond
			if d > 20*time.Millisecond {
				d = 10 * time.Millisecond
			}
		}
	})
}
