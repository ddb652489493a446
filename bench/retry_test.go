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

// callWatch is callCtx for an operation that looks at its context once
// before answering, as one about to do I/O does: it reads Done (which
// makes a context that sets up its cancellation lazily set it up) and
// fails if the context has ended.
func (o *op) callWatch(ctx context.Context) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	default:
		return o.call()
	}
}

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

// reqCtx returns the context every case passes as the caller's: a
// cancellable one, as a request's context is, not context.Background(),
// whose Done channel is nil and lets a library skip work a real call
// pays for.
func reqCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return ctx
}

// unherdPolicy is unherd's retry policy for the comparisons: the
// defaults (3 attempts, full jitter from 50 ms to 20 s) with schedule s if
// it is set, and no retry budget, since no peer has one in these cases
// (BenchmarkBudgetParallel measures the budget).
func unherdPolicy(b *testing.B, s *backoff.Schedule) *retry.Policy {
	cfg := retry.Config{Budget: budget.Unlimited}
	if s != nil {
		cfg.Backoff = *s
	}
	p, err := retry.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkFirstSuccess is a call whose first attempt succeeds: the cost a
// retry library adds to every healthy call. Every library is configured
// with three attempts and its jittered exponential backoff from 50 ms; the
// backoff is never used.
func BenchmarkFirstSuccess(b *testing.B) {
	runScenario(b, 0, delayExp)
}

// BenchmarkRetry2 is a call that fails twice and then succeeds, with a zero
// delay between attempts. It is a floor, not a comparison of equal work:
// unherd's immediate schedule arms no timer, while every peer arms one
// even for a zero delay. BenchmarkRetryWait compares equal work.
func BenchmarkRetry2(b *testing.B) {
	runScenario(b, 2, delayZero)
}

// waitDelay is the delay between attempts in BenchmarkRetryWait: the
// shortest a timer can be armed for, so that every library waits on a
// timer and the wait itself costs next to nothing.
const waitDelay = time.Nanosecond

// BenchmarkRetryWait is a call that fails twice and then succeeds, with a
// constant 1 ns delay between attempts: what a retry that really waits
// costs, every library arming a timer for each wait. floor-timer is a
// hand-written loop that arms one time.Timer per call and resets it for
// the second wait.
func BenchmarkRetryWait(b *testing.B) {
	b.Run("floor-timer", func(b *testing.B) {
		b.ReportAllocs()
		ctx := reqCtx(b)
		o := newOp(2, errFail)
		for b.Loop() {
			v, err := timerLoop(ctx, o)
			checkResult(b, v, err)
		}
		o.check(b)
	})
	runScenario(b, 2, delayWait)
}

// timerLoop is floor-timer's call: up to three attempts, a 1 ns wait on
// one timer between them, the caller's context honoured during the wait.
func timerLoop(ctx context.Context, o *op) (int, error) {
	var t *time.Timer
	var v int
	var err error
	for i := range attempts {
		if v, err = o.call(); err == nil || i == attempts-1 {
			break
		}
		if t == nil {
			t = time.NewTimer(waitDelay)
		} else {
			t.Reset(waitDelay)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	}
	if t != nil {
		t.Stop()
	}
	return v, err
}

// delayKind is what a scenario asks each library to wait between attempts.
type delayKind int

const (
	delayExp  delayKind = iota // jittered exponential from 50 ms to 20 s
	delayZero                  // no delay
	delayWait                  // a constant waitDelay
)

// runScenario runs one sub-benchmark per library for a call whose first
// fails attempts fail, each library waiting as delay says. Peers get their
// cheapest correct usage: policies, executors and option lists are built
// once outside the loop where the library allows it, and per call only
// where it keeps state per call.
func runScenario(b *testing.B, fails int, delay delayKind) {
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

	if delay != delayWait { // floor-timer is RetryWait's floor
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
	}

	b.Run("unherd", func(b *testing.B) {
		b.ReportAllocs()
		var s *backoff.Schedule // the default: full jitter, 50 ms to 20 s
		switch delay {
		case delayZero:
			s = &backoff.Schedule{Immediate: true}
		case delayWait:
			s = &backoff.Schedule{Base: waitDelay, Cap: waitDelay, Jitter: backoff.None, Constant: true}
		}
		p := unherdPolicy(b, s)
		ctx := reqCtx(b)
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
		switch delay {
		case delayExp:
			rb = rb.WithBackoff(base, maxDelay).WithJitterFactor(1)
		case delayWait:
			rb = rb.WithDelay(waitDelay)
		}
		// The executor, context included, is built once: the context is
		// the same for every call here.
		exec := failsafe.With[int](rb.Build()).WithContext(reqCtx(b))
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
		switch delay {
		case delayZero:
			bo = &cenkalti.ZeroBackOff{}
		case delayWait:
			bo = cenkalti.NewConstantBackOff(waitDelay)
		}
		opts := []cenkalti.RetryOption{cenkalti.WithBackOff(bo), cenkalti.WithMaxTries(attempts)}
		ctx := reqCtx(b)
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
			avast.Context(reqCtx(b)),
			avast.Attempts(attempts),
			avast.Delay(base),
			avast.MaxDelay(maxDelay),
			avast.DelayType(avast.FullJitterBackoffDelay),
		}
		switch delay {
		case delayZero:
			opts = append(opts, avast.Delay(0), avast.DelayType(avast.FixedDelay))
		case delayWait:
			opts = append(opts, avast.Delay(waitDelay), avast.DelayType(avast.FixedDelay))
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
		constant := func(d time.Duration) sethvargo.Backoff {
			return sethvargo.BackoffFunc(func() (time.Duration, bool) { return d, false })
		}
		zero, wait := constant(0), constant(waitDelay)
		ctx := reqCtx(b)
		for b.Loop() {
			// A go-retry Backoff counts its retries, so each call needs
			// its own.
			var bo sethvargo.Backoff
			switch delay {
			case delayZero:
				bo = sethvargo.WithMaxRetries(attempts-1, zero)
			case delayWait:
				bo = sethvargo.WithMaxRetries(attempts-1, wait)
			default:
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
