package bench

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/bulkhead"

	"github.com/unherd/unherd/limit"
)

// fixedLimit is the limit of the fixed cases, unherd's Fixed and
// failsafe-go's bulkhead: the adaptive limiters' initial limit in both
// libraries, more than the benchmark ever has in flight.
const fixedLimit = 20

// limitCase is one concurrency limiter under the same work per op: try to
// admit a request without waiting and, if admitted, release it as served
// with its latency. call does one op and reports whether it was admitted.
type limitCase struct {
	name string
	call func() (admitted bool)
}

// limitCases returns a fresh limiter of every library for each case, so no
// case inherits another's state. Each case reads the clock twice per
// admitted request, at the acquire and at the release: failsafe-go's
// adaptive limiter reads time.Now itself in TryAcquirePermit and Record,
// and unherd's limiter is given limit.Now() at both, the monotonic-only
// reading that unherdhttp.Shed and unherdgrpc's server pass it. The
// bulkhead reads no clock, as it keeps no latency.
func limitCases(b *testing.B) []limitCase {
	newLimiter := func(a limit.Algorithm) *limit.Limiter {
		l, err := limit.New(limit.Config{Algorithm: a})
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	unherdCall := func(l *limit.Limiter) func() bool {
		return func() bool {
			tok, ok := l.Acquire(limit.Now())
			if !ok {
				return false
			}
			tok.Served(limit.Now())
			return true
		}
	}
	aimd, err := limit.NewAIMD(limit.AIMDConfig{})
	if err != nil {
		b.Fatal(err)
	}
	al := adaptivelimiter.NewWithDefaults[any]()
	bh := bulkhead.New[any](fixedLimit)
	var sink time.Duration
	return []limitCase{
		// The clock reads alone: failsafe-go's two time.Now, and
		// unherd's two limit.Now, the floors under their cases.
		{"floor-clock", func() bool {
			start := time.Now()
			//lint:ignore S1012 two full reads of the clock, as failsafe-go makes; time.Since reads the monotonic clock only
			sink += time.Now().Sub(start)
			return true
		}},
		{"floor-clock-mono", func() bool {
			start := limit.Now()
			sink += limit.Now().Sub(start)
			return true
		}},
		{"unherd", unherdCall(newLimiter(nil))}, // Gradient, the default
		{"unherd-aimd", unherdCall(newLimiter(aimd))},
		{"unherd-fixed", unherdCall(newLimiter(limit.Fixed(fixedLimit)))},
		{"failsafe-go", func() bool {
			p, ok := al.TryAcquirePermit()
			if !ok {
				return false
			}
			p.Record()
			return true
		}},
		{"failsafe-go-bulkhead", func() bool {
			if !bh.TryAcquirePermit() {
				return false
			}
			bh.ReleasePermit()
			return true
		}},
	}
}

// reportAdmitted reports the share of ops admitted and fails the case if
// none was: a limiter that refuses everything would look fast.
func reportAdmitted(b *testing.B, ops, admitted int64) {
	if ops == 0 {
		return
	}
	if admitted == 0 {
		b.Fatalf("0 of %d requests admitted", ops)
	}
	b.ReportMetric(float64(admitted)/float64(ops), "admitted/op")
}

// BenchmarkLimit is one request at a time through a concurrency limiter:
// acquire without waiting, release as served with a latency sample. unherd
// runs with Gradient (its default), AIMD and Fixed, each in its default
// configuration; failsafe-go with its adaptive limiter in its defaults
// (NewWithDefaults) and its bulkhead, the fixed limit with a non-blocking
// acquire.
func BenchmarkLimit(b *testing.B) {
	for _, c := range limitCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var admitted int64
			for b.Loop() {
				if c.call() {
					admitted++
				}
			}
			reportAdmitted(b, int64(b.N), admitted)
		})
	}
}

// BenchmarkLimitParallel is BenchmarkLimit from GOMAXPROCS goroutines at
// once (b.RunParallel), all on one limiter: up to GOMAXPROCS requests in
// flight, and every acquire and release on the limiter's shared state.
func BenchmarkLimitParallel(b *testing.B) {
	for _, c := range limitCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var ops, admitted atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				var n, a int64
				for pb.Next() {
					n++
					if c.call() {
						a++
					}
				}
				ops.Add(n)
				admitted.Add(a)
			})
			reportAdmitted(b, ops.Load(), admitted.Load())
		})
	}
}
