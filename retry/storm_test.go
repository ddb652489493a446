package retry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
)

// The retry-amplification arithmetic of the SRE book's "Handling Overload"
// chapter, as a test: an open stream of 100 calls per second, each in its
// own goroutine, against a dependency that fails everything, with 3
// attempts and a 1 ms constant backoff, for 60 virtual seconds.
const (
	stormRate     = 100 // calls per second
	stormSeconds  = 60
	stormInterval = time.Second / stormRate
	stormCalls    = stormRate * stormSeconds
)

var errDown = errors.New("dependency down")

// storm runs the stream through a Policy with budget b (built inside the
// bubble, so a Ratio reads virtual time) and returns the attempts the
// dependency saw in each virtual second.
func storm(t *testing.T, newBudget func() budget.Budget) []int64 {
	t.Helper()
	var perSecond []int64
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{
			MaxAttempts: 3,
			Budget:      newBudget(),
			Backoff: backoff.Schedule{Base: time.Millisecond, ThrottledBase: time.Millisecond,
				Cap: time.Millisecond, Constant: true, Jitter: backoff.None},
		})
		start := time.Now()
		var seen [stormSeconds + 1]atomic.Int64 // +1: the last calls' retries end just after 60 s
		dependency := func(context.Context) error {
			seen[time.Since(start)/time.Second].Add(1)
			return errDown
		}
		tick := time.NewTicker(stormInterval)
		defer tick.Stop()
		var wg sync.WaitGroup
		for i := range stormCalls {
			if i > 0 {
				<-tick.C
			}
			wg.Go(func() {
				if err := p.Do(t.Context(), dependency); !errors.Is(err, errDown) {
					t.Errorf("call %d: err = %v, want one wrapping errDown", i, err)
				}
			})
		}
		wg.Wait()
		for i := range seen {
			perSecond = append(perSecond, seen[i].Load())
		}
	})
	return perSecond
}

// rates returns the mean attempts per second over the whole run and over
// the seconds [from, stormSeconds), and the largest single second in that
// range.
func rates(perSecond []int64, from int) (overall, steady float64, peak int64) {
	var total, part int64
	for i, n := range perSecond {
		total += n
		if i >= from && i < stormSeconds {
			part += n
			peak = max(peak, n)
		}
	}
	return float64(total) / stormSeconds, float64(part) / float64(stormSeconds-from), peak
}

func TestStorm(t *testing.T) {
	tests := []struct {
		name      string
		newBudget func() budget.Budget
		// from is the first second of the steady state.
		from int
		// The overall rate must be in [minRate, maxRate]; the steady
		// seconds' mean and peak at most maxSteady and maxPeak.
		minRate, maxRate float64
		maxSteady        float64
		maxPeak          int64
	}{
		{
			// Nothing stops the retries: 3 attempts per call, exactly.
			name:      "no budget",
			newBudget: func() budget.Budget { return budget.Unlimited },
			minRate:   300, maxRate: 300, maxSteady: 300, maxPeak: 300,
		},
		{
			// 500 tokens pay for 35 retries of 14 (the default quota,
			// retry behaviour 2.1), leaving 10: the first calls retry,
			// then the bucket is too low and nothing refills it. Exactly
			// 6000 + 35 attempts, and from second 1 on exactly the 100
			// first attempts a second.
			name:      "token bucket",
			newBudget: fresh(t, budget.NewTokenBucket, budget.TokenBucketConfig{}),
			from:      1,
			minRate:   6035.0 / stormSeconds, maxRate: 6035.0 / stormSeconds, maxSteady: 100, maxPeak: 100,
		},
		{
			// gRPC retry throttling with A6's example (10 tokens, 0.1
			// per success): every failed attempt costs a token and
			// retries stop at half, so the first call makes 3 attempts
			// (10 -> 7 tokens), the second 2 (7 -> 5), and no call
			// retries after that: exactly 6000 + 3 attempts.
			name:      "gRPC retry throttling",
			newBudget: fresh(t, budget.NewGRPC, budget.GRPCConfig{}),
			from:      1,
			minRate:   6003.0 / stormSeconds, maxRate: 6003.0 / stormSeconds, maxSteady: 100, maxPeak: 100,
		},
		{
			// Without the floor, retries in each 10 s window are at most
			// 10% of its 1000 requests, and the 60 s run is six such
			// windows (the ring's slots start at the run's start), so at
			// most 600 retries: 110/s overall with no tolerance needed.
			// Requests are counted before their retry is withdrawn, so
			// the allowance is there from the first second; at least
			// 108/s checks that the budget lets its 10% through (the
			// slack is for where whole retries fall against the slots).
			// A single steady second may hold one retry more than its
			// share, where the allowance crosses a whole number at a
			// second's edge: peak 111.
			name:      "ratio 10% without floor",
			newBudget: fresh(t, budget.NewRatio, budget.RatioConfig{Ratio: 0.1, NoFloor: true}),
			from:      10,
			minRate:   108, maxRate: 110, maxSteady: 110, maxPeak: 111,
		},
		{
			// The default floor adds 10 retries a second, that is a
			// reserve of 100 per 10 s window: at most 200 retries per
			// window, 120/s overall, 115/s at least for the same reason
			// as above. The reserve is spent at once (50 calls retry
			// twice) and comes back at once when those retries leave the
			// window, so one second in ten sees a burst: at most
			// 100 + 10 + 100 = 210 attempts in a second.
			name:      "ratio 10% with the default floor",
			newBudget: fresh(t, budget.NewRatio, budget.RatioConfig{}),
			from:      10,
			minRate:   115, maxRate: 120, maxSteady: 120, maxPeak: 210,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			perSecond := storm(t, tc.newBudget)
			overall, steady, peak := rates(perSecond, tc.from)
			t.Logf("dependency saw %.2f attempts/s overall; %.2f/s mean, %d peak from second %d on (per second: %v)",
				overall, steady, peak, tc.from, perSecond)
			if overall < tc.minRate || overall > tc.maxRate {
				t.Errorf("overall rate %.2f/s, want within [%.2f, %.2f]", overall, tc.minRate, tc.maxRate)
			}
			if steady > tc.maxSteady || peak > tc.maxPeak {
				t.Errorf("steady state %.2f/s mean, %d peak; want at most %.2f and %d", steady, peak, tc.maxSteady, tc.maxPeak)
			}
		})
	}
}

// TestDefaultBudgetPerPolicy checks that a Policy built without a budget
// has a token bucket, and one of its own: draining one Policy's leaves
// another's untouched.
func TestDefaultBudgetPerPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Backoff: backoff.Schedule{Immediate: true}}
		drained, fresh := mustNew(t, cfg), mustNew(t, cfg)
		fail := func(context.Context) error { return errDown }
		// 17 failing calls retry twice each at 14 tokens: 476 of the 500;
		// the 18th retries once, and 10 tokens are left, too few for a
		// retry.
		for i := range 17 {
			if err := drained.Do(t.Context(), fail); !errors.Is(err, ErrAttemptsExhausted) {
				t.Fatalf("call %d: err = %v, want attempts exhausted", i, err)
			}
		}
		calls := 0
		err := drained.Do(t.Context(), failing(9, errDown, &calls))
		if !errors.Is(err, ErrBudgetExhausted) || calls != 2 {
			t.Fatalf("call 18: %d calls, err = %v; want 2 calls, budget exhausted", calls, err)
		}
		calls = 0
		err = drained.Do(t.Context(), failing(9, errDown, &calls))
		if !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, errDown) || calls != 1 {
			t.Fatalf("drained policy: %d calls, err = %v; want 1 call, budget exhausted", calls, err)
		}
		calls = 0
		err = fresh.Do(t.Context(), failing(9, errDown, &calls))
		if !errors.Is(err, ErrAttemptsExhausted) || calls != 3 {
			t.Fatalf("fresh policy: %d calls, err = %v; want 3 calls, attempts exhausted", calls, err)
		}
		// The budget is a bucket: a success refills it by 1 (first
		// attempt) and a retry then costs 14: 4 successes pay for one.
		for range 4 {
			if err := drained.Do(t.Context(), func(context.Context) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		calls = 0
		err = drained.Do(t.Context(), failing(9, errDown, &calls))
		if !errors.Is(err, ErrBudgetExhausted) || calls != 2 {
			t.Fatalf("after 4 successes: %d calls, err = %v; want 2 calls (one retry paid), budget exhausted", calls, err)
		}
	})
}

// fresh returns a function that makes a new budget with mk and cfg at
// each call, for a case that runs more than once.
func fresh[C any, B budget.Budget](t *testing.T, mk func(C) (B, error), cfg C) func() budget.Budget {
	return func() budget.Budget {
		b, err := mk(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}
