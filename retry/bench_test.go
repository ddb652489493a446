package retry

import (
	"context"
	"errors"
	"testing"

	"github.com/unherd/unherd/backoff"
)

// BenchmarkDoSuccess measures a call whose first attempt succeeds, with the
// default policy.
func BenchmarkDoSuccess(b *testing.B) {
	b.ReportAllocs()
	p := Default()
	ctx := context.Background()
	op := func(context.Context) error { return nil }
	for b.Loop() {
		if err := p.Do(ctx, op); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoRetry2 measures a call that fails twice and then succeeds,
// with a zero delay between attempts.
func BenchmarkDoRetry2(b *testing.B) {
	b.ReportAllocs()
	p, err := New(Config{Backoff: backoff.Schedule{Immediate: true}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
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
