package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
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
		cfg  Config
	}{
		{"plain", plain, Config{Budget: budget.Unlimited}},
		{"throttled", Judge(plain, Verdict{Class: failure.Throttled}), Config{Budget: budget.Unlimited}},
		{"wrapped", fmt.Errorf("bench: get: %w", plain), Config{Budget: budget.Unlimited}},
		{"serverdelay", Judge(plain, Verdict{Class: failure.Throttled, Delay: time.Millisecond, HasDelay: true}), Config{Budget: budget.Unlimited}},
		{"tokenbucket", plain, Config{}},
		{"guarded", plain, Config{Budget: budget.Unlimited, Guards: []admission.Guard{nopGuard{}}}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			benchCallFailure(b, tc.cfg, tc.err)
		})
	}
}

func benchCallFailure(b *testing.B, cfg Config, err error) {
	b.ReportAllocs()
	p, e := New(cfg)
	if e != nil {
		b.Fatal(e)
	}
	ctx := context.Background()
	now := time.Unix(1e9, 0)
	c := p.Begin(false)
	var draw uint64 = 0x9e3779b97f4a7c15
	calls := 0
	for b.Loop() {
		if err := c.Admit(ctx); err != nil {
			b.Fatal(err)
		}
		draw = draw*6364136223846793005 + 1442695040888963407
		if d := c.Done(now, time.Time{}, err, draw); d.Reason != nil {
			calls++
			c = p.Begin(false)
		}
	}
	if calls == 0 && b.N > 3 {
		b.Fatalf("no call stopped in %d attempts", b.N)
	}
}
