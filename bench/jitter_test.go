package bench

import (
	"math/rand/v2"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v4"
	cenkalti "github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/go-retryablehttp"
	sethvargo "github.com/sethvargo/go-retry"

	"github.com/unherd/unherd/backoff"
)

// retries is the number of retry indices the jitter cases cycle through:
// delays for retries 0..7, so that the exponential growth is exercised
// and no case computes the same delay every time.
const retries = 8

// checkDelay fails the benchmark if d is outside [0, hi].
func checkDelay(b *testing.B, d, hi time.Duration) {
	if d < 0 || d > hi {
		b.Fatalf("delay %v outside [0, %v]", d, hi)
	}
}

// ceiling returns min(maxDelay, base*2^n), the full-jitter ceiling of
// retry n.
func ceiling(n int) time.Duration { return min(maxDelay, base<<n) }

// BenchmarkJitterDelay computes one jittered delay, for retries 0..7 in
// turn, with a 50 ms base and a 20 s cap, or the closest each library
// offers. failsafe-go has no case: it computes delays only inside an
// execution and exports no function or object that returns one.
func BenchmarkJitterDelay(b *testing.B) {
	b.Run("floor-rand", func(b *testing.B) {
		// One bounded draw from math/rand/v2: what any jitter costs at
		// least.
		b.ReportAllocs()
		for b.Loop() {
			d := time.Duration(rand.Int64N(int64(base)))
			checkDelay(b, d, base)
		}
	})

	b.Run("unherd", func(b *testing.B) {
		b.ReportAllocs()
		var s backoff.Schedule // full jitter, base 50 ms, cap 20 s
		n := 0
		for b.Loop() {
			d := s.Delay(n, 0, backoff.Draw())
			checkDelay(b, d, ceiling(n))
			n = (n + 1) % retries
		}
	})

	b.Run("cenkalti-backoff", func(b *testing.B) {
		// Its delay is interval*(1 ± RandomizationFactor); a factor of 1
		// spreads it over [0, 2*interval], the closest it has to full
		// jitter. The object keeps the interval; Reset starts over.
		b.ReportAllocs()
		bo := &cenkalti.ExponentialBackOff{
			InitialInterval:     base,
			RandomizationFactor: 1,
			Multiplier:          2,
			MaxInterval:         maxDelay,
		}
		n := 0
		for b.Loop() {
			if n == 0 {
				bo.Reset()
			}
			d := bo.NextBackOff()
			checkDelay(b, d, 2*ceiling(n)+1)
			n = (n + 1) % retries
		}
	})

	b.Run("retry-go", func(b *testing.B) {
		b.ReportAllocs()
		var cfg avast.Config
		avast.Delay(base)(&cfg)
		avast.MaxDelay(maxDelay)(&cfg)
		n := 0
		for b.Loop() {
			d := avast.FullJitterBackoffDelay(uint(n), nil, &cfg)
			checkDelay(b, d, ceiling(n))
			n = (n + 1) % retries
		}
	})

	b.Run("go-retry", func(b *testing.B) {
		// A go-retry Backoff keeps its retry count and has no reset; one
		// long-lived backoff is used (once past its 63rd delay it stays at
		// the cap), so building it is not counted.
		b.ReportAllocs()
		bo := sethvargo.WithFullJitter(sethvargo.WithCappedDuration(maxDelay, sethvargo.NewExponential(base)))
		for b.Loop() {
			d, stop := bo.Next()
			if stop {
				b.Fatal("backoff stopped")
			}
			checkDelay(b, d, maxDelay)
		}
	})

	b.Run("retryablehttp", func(b *testing.B) {
		// Its DefaultBackoff has no jitter; LinearJitterBackoff draws
		// uniformly from [min, max]*(attempt+1), full jitter with min 0
		// but growing linearly.
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			d := retryablehttp.LinearJitterBackoff(0, base, n, nil)
			checkDelay(b, d, base*time.Duration(n+1))
			n = (n + 1) % retries
		}
	})
}
