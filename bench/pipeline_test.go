package bench

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	fsbudget "github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/throttle"
)

// attemptTimeout is the per-attempt timeout of the pipeline cases: long
// enough never to fire.
const attemptTimeout = time.Second

// BenchmarkPipeline is a first-attempt success through a whole pipeline:
// a retry loop (three attempts, jittered exponential backoff from 50 ms)
// with a retry budget, a circuit breaker and client-side adaptive
// throttling consulted before the attempt, and a per-attempt timeout, each
// in its library's default configuration. floor-direct is the bare call;
// floor-timeout is the bare call under one context.WithTimeout, the least
// any attempt timeout costs, since it needs a context of its own.
//
// The operation never looks at its context, as one answered from memory
// does not: an attempt context that sets up its timer only when watched
// (unherd's) arms none here, while context.WithTimeout always arms one.
// BenchmarkPipelineWatched is the same with an operation that does.
func BenchmarkPipeline(b *testing.B) {
	benchPipeline(b, (*op).callCtx)
}

// BenchmarkPipelineWatched is BenchmarkPipeline with an operation that
// reads its context's Done channel once before answering, as one that
// does I/O does: every attempt context, unherd's included, then arms its
// timer and follows the caller's context.
func BenchmarkPipelineWatched(b *testing.B) {
	benchPipeline(b, (*op).callWatch)
}

// benchPipeline runs the pipeline cases with call as the operation.
func benchPipeline(b *testing.B, call func(*op, context.Context) (int, error)) {
	b.Run("floor-direct", func(b *testing.B) {
		b.ReportAllocs()
		ctx := reqCtx(b)
		o := newOp(0, errFail)
		for b.Loop() {
			v, err := call(o, ctx)
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("floor-timeout", func(b *testing.B) {
		b.ReportAllocs()
		ctx := reqCtx(b)
		o := newOp(0, errFail)
		for b.Loop() {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			v, err := call(o, actx)
			cancel()
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("unherd", func(b *testing.B) {
		b.ReportAllocs()
		p := unherdPipeline(b)
		ctx := reqCtx(b)
		o := newOp(0, errFail)
		fn := func(ctx context.Context) (int, error) { return call(o, ctx) }
		for b.Loop() {
			v, err := retry.DoValue(ctx, p, fn)
			checkResult(b, v, err)
		}
		o.check(b)
	})

	b.Run("failsafe-go", func(b *testing.B) {
		b.ReportAllocs()
		rp := retrypolicy.NewBuilder[int]().
			WithMaxAttempts(attempts).
			WithBackoff(base, maxDelay).
			WithJitterFactor(1).
			WithBudget(fsbudget.New()).
			Build()
		// Outermost first: retries around the guards, the timeout around
		// each attempt.
		exec := failsafe.With[int](rp,
			circuitbreaker.NewWithDefaults[int](),
			adaptivethrottler.NewWithDefaults[int](),
			timeout.New[int](attemptTimeout)).WithContext(reqCtx(b))
		o := newOp(0, errFail)
		fn := func(e failsafe.Execution[int]) (int, error) { return call(o, e.Context()) }
		for b.Loop() {
			v, err := exec.GetWithExecution(fn)
			checkResult(b, v, err)
		}
		o.check(b)
	})
}

// unherdPipeline is unherd's pipeline: the retry defaults (three attempts,
// full jitter from 50 ms) with a Ratio budget, a breaker and an adaptive
// throttle as guards, and the attempt timeout, each at its defaults.
func unherdPipeline(tb testing.TB) *retry.Policy {
	br, err := breaker.New(breaker.Settings{})
	if err != nil {
		tb.Fatal(err)
	}
	th, err := throttle.NewAdaptive(throttle.AdaptiveSettings{})
	if err != nil {
		tb.Fatal(err)
	}
	bud, err := budget.NewRatio(budget.RatioConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := retry.New(retry.Config{
		Budget:         bud,
		Guards:         []admission.Guard{br, th},
		AttemptTimeout: attemptTimeout,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
