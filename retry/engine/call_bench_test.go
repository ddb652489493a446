package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// BenchmarkCallFailure measures one failed attempt driven through a Call,
// as the simulator and every integration drive it: Admit, then Done with
// the attempt's error, the time and a draw. ns/op is per attempt; a call
// makes up to three (two retries, then ErrAttemptsExhausted), and a new
// one begins when the last stops. The sub-benchmarks vary the error (a
// plain sentinel, a throttled one, one wrapped by fmt.Errorf, one with a
// server delay), the budget (unlimited, or the default token bucket, which
// empties and refuses most retries) and whether a guard is told.
func BenchmarkCallFailure(b *testing.B) {
	plain := errors.New("bench: unavailable")
	cases := []struct {
		name string
		err  error
		cfg  retry.Config
	}{
		{"plain", plain, retry.Config{Budget: budget.Unlimited}},
		{"throttled", retry.Judge(plain, retry.Verdict{Class: failure.Throttled}), retry.Config{Budget: budget.Unlimited}},
		{"wrapped", fmt.Errorf("bench: get: %w", plain), retry.Config{Budget: budget.Unlimited}},
		{"serverdelay", retry.Judge(plain, retry.Verdict{Class: failure.Throttled, Delay: time.Millisecond, HasDelay: true}), retry.Config{Budget: budget.Unlimited}},
		{"tokenbucket", plain, retry.Config{}},
		{"guarded", plain, retry.Config{Budget: budget.Unlimited, Guards: []admission.Guard{nopGuard{}}}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			benchCallFailure(b, tc.cfg, tc.err)
		})
	}
}

func benchCallFailure(b *testing.B, cfg retry.Config, err error) {
	b.ReportAllocs()
	p, e := retry.New(cfg)
	if e != nil {
		b.Fatal(e)
	}
	ctx := context.Background()
	now := time.Unix(1e9, 0)
	c := engine.Begin(ctx, p)
	var draw uint64 = 0x9e3779b97f4a7c15
	calls := 0
	for b.Loop() {
		if err := c.Admit(ctx); err != nil {
			b.Fatal(err)
		}
		draw = draw*6364136223846793005 + 1442695040888963407
		if d := c.Done(now, time.Time{}, err, draw); d.Reason != nil {
			calls++
			c = engine.Begin(ctx, p)
		}
	}
	if calls == 0 && b.N > 3 {
		b.Fatalf("no call stopped in %d attempts", b.N)
	}
}

// nopGuard admits every attempt and ignores outcomes: it measures what the
// guarded path itself costs.
type nopGuard struct{}

func (nopGuard) Admit(context.Context) (uint64, error)           { return 1, nil }
func (nopGuard) Done(context.Context, uint64, admission.Outcome) {}
