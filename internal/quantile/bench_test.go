package quantile

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/lognormal"
)

// latencies returns n lognormal latencies around 10 ms, sigma 0.5: the
// same on every run.
func latencies(n int) []time.Duration { return lognormal.Sample(n, 10*time.Millisecond, 0.5) }

// BenchmarkQuantileRecordParallel records lognormal latencies from every
// core into one estimator, with one tracked quantile, as a hedger does.
func BenchmarkQuantileRecordParallel(b *testing.B) {
	b.ReportAllocs()
	e := mustNew(b, Config{Quantiles: []float64{0.95}})
	lat := latencies(1024)
	var seed atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(1)) * 97
		for pb.Next() {
			e.Record(lat[i&1023])
			i++
		}
	})
}

// BenchmarkQuantileRecord is the same from one goroutine.
func BenchmarkQuantileRecord(b *testing.B) {
	b.ReportAllocs()
	e := mustNew(b, Config{Quantiles: []float64{0.95}})
	lat := latencies(1024)
	i := 0
	for b.Loop() {
		e.Record(lat[i&1023])
		i++
	}
}

// BenchmarkQuantileScan is one full Quantile query.
func BenchmarkQuantileScan(b *testing.B) {
	b.ReportAllocs()
	e := mustNew(b, Config{})
	for _, d := range latencies(4096) {
		e.Record(d)
	}
	for b.Loop() {
		e.Quantile(0.95)
	}
}
