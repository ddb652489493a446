package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
)

// BenchmarkDoSuccess measures a call whose first attempt succeeds, with the
// default policy.
func BenchmarkDoSuccess(b *testing.B) {
	b.ReportAllocs()
	p := retry.Default()
	ctx := context.Background()
	op := func(context.Context) error { return nil }
	for b.Loop() {
		if err := p.Do(ctx, op); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoRetry2 measures a call that fails twice and then succeeds,
// with a zero delay between attempts. It opts out of the budget: under the
// default token bucket every such call nets -5 tokens (two retries cost
// 10, the success refunds the last one's 5), so after 100 calls the bucket
// would rightly stop retrying, and the loop would no longer be measured.
func BenchmarkDoRetry2(b *testing.B) {
	b.ReportAllocs()
	benchRetry2(b, context.Background(), retry.Config{Backoff: backoff.Schedule{Immediate: true}, Budget: budget.Unlimited})
}

// benchRetry2 runs calls that fail twice and then succeed through a
// Policy built from cfg, under ctx, and checks that each made 3 attempts.
func benchRetry2(b *testing.B, ctx context.Context, cfg retry.Config) {
	b.Helper()
	p, err := retry.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	errFail := errors.New("fail")
	n := 0
	op := func(context.Context) error {
		n++
		if n%3 != 0 {
			return errFail
		}
		return nil
	}
	for b.Loop() {
		if err := p.Do(ctx, op); err != nil {
			b.Fatal(err)
		}
	}
	if n != 3*b.N {
		b.Fatalf("%d attempts for %d calls, want 3 each", n, b.N)
	}
}

// nopGuard admits every attempt and ignores outcomes: it measures what the
// guarded path itself costs.
type nopGuard struct{}

func (nopGuard) Admit(context.Context) (uint64, error)           { return 1, nil }
func (nopGuard) Done(context.Context, uint64, admission.Outcome) {}

// BenchmarkDoRetry2Guarded is BenchmarkDoRetry2 through one guard: each
// failed attempt is classified for the guard's report and decided on.
func BenchmarkDoRetry2Guarded(b *testing.B) {
	b.ReportAllocs()
	benchRetry2(b, context.Background(), retry.Config{Backoff: backoff.Schedule{Immediate: true}, Budget: budget.Unlimited, Guards: []admission.Guard{nopGuard{}}})
}

// BenchmarkDoRetry2Wait is BenchmarkDoRetry2 with a real wait: a constant
// 1 ns delay, so that each retry arms a timer.
func BenchmarkDoRetry2Wait(b *testing.B) {
	b.ReportAllocs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchRetry2(b, ctx, retry.Config{
		Backoff: backoff.Schedule{Base: time.Nanosecond, Cap: time.Nanosecond, Jitter: backoff.None, Constant: true},
		Budget:  budget.Unlimited,
	})
}
