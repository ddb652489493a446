package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v4"
	cenkalti "github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	sethvargo "github.com/sethvargo/go-retry"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
)

// Settings shared by every library that has them: three attempts (the
// first and two retries), a 50 ms base doubling to a 20 s cap, jittered.
// These are unherd's defaults; each peer is set to match where it can.
const (
	attempts = 3
	base     = 50 * time.Millisecond
	maxDelay = 20 * time.Second
	want     = 42 // the value every successful operation returns
)

var errFail = errors.New("transient failure")

// op is an operation that fails its first fails attempts of every call
// with fail and then returns want. It counts attempts so that each case can
// check that every call made exactly the attempts the scenario says; a
// countdown, not a modulo, keeps its own cost to a few instructions.
type op struct {
	n     int // attempts made, over all calls
	k     int // failures returned in the current call
	fails int
	fail  error
}

func newOp(fails int, fail error) *op { return &op{fails: fails, fail: fail} }

// call is the operation in the shape that takes no context.
func (o *op) call() (int, error) {
	o.n++
	if o.k < o.fails {
		o.k++
		return 0, o.fail
	}
	o.k = 0
	return want, nil
}

// callCtx is the operation in the shape that takes a context.
func (o *op) callCtx(context.Context) (int, error) { return o.call() }

// check fails the benchmark unless every call made exactly fails+1
// attempts.
func (o *op) check(b *testing.B) {
	b.Helper()
	if o.n != (o.fails+1)*b.N || o.k != 0 {
		b.Fatalf("%d attempts for %d calls, want %d per call", o.n, b.N, o.fails+1)
	}
}

func checkResult(b *testing.B, v int, err error) {
	if err != nil || v != want {
		b.Fatalf("got (%d, %v), want (%d, nil)", v, err, want)
	}
}

// BenchmarkFirstSuccess is a call whose first attempt succeeds: the cost a
// retry library adds to every healthy call. Every library is configured
// with three attempts and its jittered exponential backoff from 50 ms; the
// backoff is never used.
func BenchmarkFirstSuccess(b *testing.B) {
	runScenario(b, 0)
}

// BenchmarkRetry2 is a call that fails twice and then succeeds, with a zero
// delay between attempts: the cost of the retry machinery itself.
func BenchmarkRetry2(b *testing.B) {
	runScenario(b, 2)
}

// runScenario runs one sub-benchmark per library for a call whose first
// fails attempts fail. With fails == 0 each library uses its jittered
// exponential backoff; otherwise each uses its way of saying "no delay".
// Peers get their cheapest correct usage: policies, executors and option
// lists are built once outside the loop where the library allows it, and
// per call only where it keeps state per call.
func runScenario(b *testing.B, fails int) {
	ctx := context.Background()
	immediate := fails > 0

	if fails == 0 { // a direct call cannot recover from a failure
		b.Run("floor-direct", func(b *testing.B) {
			b.ReportAllocs()
			o := newOp(0, errFail)
			for b.Loop() {
				v, err := o.call()
				checkResult(b, v, err)
			}
			o.check(b)
		})
	}

	b.Run("floor-loop", func(b *testing.B) {
		b.ReportAllocs()
		o := newOp(fails, errFail)
		for b.Loop() {
			var v int
			var err error
			for range attempts {
				if v, err = o.call(); err == nil {
					break
				}
			}
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("unherd", func(b *testing.B) {
		b.ReportAllocs()
		// The defaults: 3 attempts, full jitter from 50 ms to 20 s, and a
		// retry budget of the policy's own.
		var cfg retry.Config
		if immediate {
			cfg.Backoff = backoff.Schedule{Immediate: true}
			// Every call here fails twice, which a retry budget rightly
			// stops after a few hundred calls; the peers have no budget,
			// so the comparison opts out of it.
			cfg.Budget = budget.Unlimited
		}
		p, err := retry.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		o := newOp(fails, errFail)
		for b.Loop() {
			v, err := retry.DoValue(ctx, p, o.callCtx)
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("failsafe-go", func(b *testing.B) {
		b.ReportAllocs()
		rb := retrypolicy.NewBuilder[int]().WithMaxAttempts(attempts)
		if !immediate {
			rb = rb.WithBackoff(base, maxDelay).WithJitterFactor(1)
		}
		exec := failsafe.With[int](rb.Build())
		o := newOp(fails, errFail)
		for b.Loop() {
			v, err := exec.Get(o.call)
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("cenkalti-backoff", func(b *testing.B) {
		b.ReportAllocs()
		// An ExponentialBackOff is not safe for concurrent use; sharing one
		// across calls is correct here only because the calls are serial.
		var bo cenkalti.BackOff = &cenkalti.ExponentialBackOff{
			InitialInterval:     base,
			RandomizationFactor: 1, // the widest spread it offers: [0, 2*interval]
			Multiplier:          2,
			MaxInterval:         maxDelay,
		}
		if immediate {
			bo = &cenkalti.ZeroBackOff{}
		}
		opts := []cenkalti.RetryOption{cenkalti.WithBackOff(bo), cenkalti.WithMaxTries(attempts)}
		o := newOp(fails, errFail)
		for b.Loop() {
			v, err := cenkalti.Retry(ctx, o.call, opts...)
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("retry-go", func(b *testing.B) {
		b.ReportAllocs()
		opts := []avast.Option{
			avast.Context(ctx),
			avast.Attempts(attempts),
			avast.Delay(base),
			avast.MaxDelay(maxDelay),
			avast.DelayType(avast.FullJitterBackoffDelay),
		}
		if immediate {
			opts = append(opts, avast.Delay(0), avast.DelayType(avast.FixedDelay))
		}
		o := newOp(fails, errFail)
		for b.Loop() {
			v, err := avast.DoWithData(o.call, opts...)
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("go-retry", func(b *testing.B) {
		b.ReportAllocs()
		// go-retry retries only errors marked retryable; mark once, not
		// per attempt.
		o := newOp(fails, sethvargo.RetryableError(errFail))
		zero := sethvargo.BackoffFunc(func() (time.Duration, bool) { return 0, false })
		for b.Loop() {
			// A go-retry Backoff counts its retries, so each call needs
			// its own.
			var bo sethvargo.Backoff
			if immediate {
				bo = sethvargo.WithMaxRetries(attempts-1, zero)
			} else {
				bo = sethvargo.WithMaxRetries(attempts-1,
					sethvargo.WithCappedDuration(maxDelay,
						sethvargo.WithFullJitter(sethvargo.NewExponential(base))))
			}
			v, err := sethvargo.DoValue(ctx, bo, o.callCtx)
			checkResult(b, v, err)
		}
		o.check(b)
	})
}
