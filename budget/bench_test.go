package budget

import (
	"testing"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
)

// Every parallel benchmark runs the same traffic: nine calls in ten succeed
// at once; the tenth fails, withdraws a retry and, if allowed, succeeds on
// it. One op is one call. A budget that tracks attempts in flight
// ([Tracker]) hears each attempt start, as the retry loop tells it.
func runTraffic(b *testing.B, bud Budget) {
	b.ReportAllocs()
	tr, _ := bud.(Tracker)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if tr != nil {
				tr.Start(Attempt{N: 1})
			}
			if i%10 != 0 {
				bud.Record(Attempt{N: 1})
				continue
			}
			bud.Record(Attempt{N: 1, Failed: true, Class: failure.Transient})
			if bud.Withdraw(failure.Transient) {
				if tr != nil {
					tr.Start(Attempt{N: 2, Charged: failure.Transient})
				}
				bud.Record(Attempt{N: 2, Charged: failure.Transient})
			}
		}
	})
}

// BenchmarkConcurrencyParallel is the concurrency budget under the same
// traffic: every op is atomic adds, and a withdrawal a compare-and-swap.
func BenchmarkConcurrencyParallel(b *testing.B) {
	runTraffic(b, configtest.Must(NewConcurrency(ConcurrencyConfig{}))(b))
}

func BenchmarkTokenBucketParallel(b *testing.B) {
	runTraffic(b, configtest.Must(NewTokenBucket(TokenBucketConfig{}))(b))
}

// BenchmarkTokenBucketMutexParallel is the same bucket under a mutex, the
// alternative the atomic implementation was chosen over.
func BenchmarkTokenBucketMutexParallel(b *testing.B) {
	runTraffic(b, newRefTokenBucket(TokenBucketConfig{}))
}

// BenchmarkTokenBucketOutageParallel is the worst case for contention:
// every call fails and withdraws, and every retry succeeds and refunds.
func BenchmarkTokenBucketOutageParallel(b *testing.B) {
	tb := configtest.Must(NewTokenBucket(TokenBucketConfig{}))(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if tb.Withdraw(failure.Transient) {
				tb.Record(Attempt{N: 2, Charged: failure.Transient})
			}
		}
	})
}

func BenchmarkGRPCParallel(b *testing.B) {
	runTraffic(b, configtest.Must(NewGRPC(GRPCConfig{}))(b))
}

// BenchmarkRatioParallel runs on the real clock, as a production Ratio
// does: Record reads none, each Withdraw reads it once.
func BenchmarkRatioParallel(b *testing.B) {
	runTraffic(b, configtest.Must(NewRatio(RatioConfig{}))(b))
}
