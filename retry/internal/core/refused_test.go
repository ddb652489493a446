package core

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// refuseAll is a budget that refuses every retry.
type refuseAll struct{}

func (refuseAll) Withdraw(failure.Class) bool { return false }
func (refuseAll) Record(budget.Attempt)       {}

// refuseAfter allows the first n retries, then refuses every one.
type refuseAfter struct{ n int }

func (b *refuseAfter) Withdraw(failure.Class) bool {
	b.n--
	return b.n >= 0
}
func (*refuseAfter) Record(budget.Attempt) {}

// A retry the budget refused still waits before Do returns: by default
// at the pace of the retries it had left, with WaitRetryDelay the refused
// retry's own delay, with ReturnAtOnce nothing; the wait never reaches
// the deadline.
func TestRefusedRetryWaits(t *testing.T) {
	// 100, 200 and 400 ms without jitter, and 4 attempts: a call refused
	// after its first attempt had three retries left, 700 ms of waits,
	// one every 233.3 ms on average.
	grow := backoff.Schedule{Base: 100 * time.Millisecond, Cap: time.Second, Jitter: backoff.None}
	const pace = 700 * time.Millisecond / 3
	tests := []struct {
		name     string
		mode     BudgetExhaustion
		draw     uint64
		deadline time.Duration // 0: none
		want     time.Duration
		reason   error
	}{
		{"default: waits at the schedule's pace", WaitSchedule, 0, 0, pace, ErrBudgetExhausted},
		{"WaitSchedule: the same", WaitSchedule, 0, 0, pace, ErrBudgetExhausted},
		{"WaitRetryDelay: waits the refused retry's delay", WaitRetryDelay, 0, 0, 100 * time.Millisecond, ErrBudgetExhausted},
		{"ReturnAtOnce: returns at once", ReturnAtOnce, 0, 0, 0, ErrBudgetExhausted},
		{"a deadline before the retry's delay ends: at once", WaitSchedule, 0, 50 * time.Millisecond, 0, ErrDeadline},
		// The pace's 233 ms does not fit before a 150 ms deadline; the
		// wait is drawn again within [100 ms, 150 ms).
		{"a deadline inside the schedule, lowest draw", WaitSchedule, 0, 150 * time.Millisecond, 100 * time.Millisecond, ErrBudgetExhausted},
		{"a deadline inside the schedule, highest draw", WaitSchedule, math.MaxUint64, 150 * time.Millisecond, 150*time.Millisecond - 1, ErrBudgetExhausted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := mustNew(t, Config{MaxAttempts: 4, Budget: refuseAll{}, Backoff: grow, OnBudgetExhausted: tc.mode, Rand: constSource(tc.draw)})
				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				start := time.Now()
				err := p.Do(ctx, func(context.Context) error { return errDown })
				if took := time.Since(start); took != tc.want || !errors.Is(err, tc.reason) || !errors.Is(err, errDown) {
					t.Errorf("Do = %v after %v, want %v wrapping errDown after %v", err, took, tc.reason, tc.want)
				}
			})
		})
	}
	c := mustNew(t, Config{MaxAttempts: 4, Budget: refuseAll{}, Backoff: grow}).Begin(false)
	_ = c.Admit(context.Background())
	if d := c.Done(time.Time{}, time.Time{}, errDown, 0); d.Reason != ErrBudgetExhausted || !d.Wait || d.Delay != pace {
		t.Errorf("Decision %+v, want ErrBudgetExhausted, Wait, Delay %v", d, pace)
	}
	c = mustNew(t, Config{MaxAttempts: 4, Budget: refuseAll{}, Backoff: grow, OnBudgetExhausted: ReturnAtOnce}).Begin(false)
	_ = c.Admit(context.Background())
	if d := c.Done(time.Time{}, time.Time{}, errDown, 0); d.Wait {
		t.Errorf("Decision %+v with ReturnAtOnce, want no Wait", d)
	}
}

// refusedWait returns the Decision of a call whose budget allows the
// first allowed retries and refuses the next, given the draw u; every
// attempt fails with err. The clock stands at t0 and the deadline is
// deadline (zero for none).
func refusedWait(t *testing.T, cfg Config, allowed int, err error, deadline time.Time, u uint64) Decision {
	t.Helper()
	cfg.Budget = &refuseAfter{n: allowed}
	c := mustNew(t, cfg).Begin(false)
	for {
		_ = c.Admit(context.Background())
		d := c.Done(t0, deadline, err, u)
		if d.Reason != nil {
			if d.Reason != ErrBudgetExhausted {
				t.Fatalf("stopped with %v, want ErrBudgetExhausted", d.Reason)
			}
			return d
		}
	}
}

// WaitSchedule's wait is one draw, with the schedule's jitter, from the
// mean of the capped delays of the retries left: a looping caller comes
// back as often as the rest of its schedule would have retried, and the
// waits spread over the whole range, so callers refused together do not
// come back together. Checked on several seeds.
func TestRefusedWaitKeepsTheSchedulesPace(t *testing.T) {
	const ms = time.Millisecond
	sched := func(j backoff.Jitter) backoff.Schedule {
		return backoff.Schedule{Base: 100 * ms, ThrottledBase: time.Second, Cap: time.Second, Jitter: j}
	}
	tests := []struct {
		name     string
		jitter   backoff.Jitter
		allowed  int // retries the budget allows before it refuses one
		err      error
		lo, hi   time.Duration // the range of the wait
		wantMean time.Duration // the mean wait between the retries the call no longer makes
	}{
		// 6 attempts: retries after attempts 1 to 5, capped delays 100,
		// 200, 400, 800 and 1000 ms, 2.5 s in all, 500 ms each on
		// average; full jitter waits half of that on average.
		{"full, refused first", backoff.Full, 0, errDown, 0, 500 * ms, 250 * ms},
		// Refused after attempt 3: 400, 800 and 1000 ms were left.
		{"full, refused third", backoff.Full, 2, errDown, 0, 2200 * ms / 3, 1100 * ms / 3},
		// Equal jitter waits half, plus up to half again.
		{"equal, refused first", backoff.Equal, 0, errDown, 250 * ms, 500 * ms, 375 * ms},
		// After a throttling error the delays grow from the throttled
		// base: five retries of 1 s (the cap).
		{"full, throttled", backoff.Full, 0, Judge(errDown, Verdict{Class: failure.Throttled}), 0, 1000 * ms, 500 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{MaxAttempts: 6, Backoff: sched(tc.jitter)}
			for seed := range uint64(5) {
				r := rand.New(rand.NewPCG(seed, 1))
				const n = 20000
				var sum float64
				below := 0 // draws in the lower half of the range
				for range n {
					d := refusedWait(t, cfg, tc.allowed, tc.err, time.Time{}, r.Uint64())
					if !d.Wait || d.Delay < tc.lo || d.Delay > tc.hi {
						t.Fatalf("seed %d: Decision %+v, want a wait within [%v, %v]", seed, d, tc.lo, tc.hi)
					}
					sum += float64(d.Delay)
					if d.Delay < (tc.lo+tc.hi)/2 {
						below++
					}
				}
				if mean := time.Duration(sum / n); math.Abs(float64(mean-tc.wantMean)) > 0.02*float64(tc.wantMean) {
					t.Errorf("seed %d: mean wait %v, want %v within 2%%", seed, mean, tc.wantMean)
				}
				if share := float64(below) / n; math.Abs(share-0.5) > 0.02 {
					t.Errorf("seed %d: %.1f%% of the waits in the lower half of the range, want 50%% (uniform)", seed, 100*share)
				}
			}
		})
	}
	t.Run("no jitter waits the mean exactly", func(t *testing.T) {
		d := refusedWait(t, Config{MaxAttempts: 6, Backoff: sched(backoff.None)}, 0, errDown, time.Time{}, 12345)
		if d.Delay != 500*ms {
			t.Errorf("wait %v, want 500ms", d.Delay)
		}
	})
	t.Run("capped retries count without a loop per attempt", func(t *testing.T) {
		d := refusedWait(t, Config{MaxAttempts: 1000, Backoff: sched(backoff.None)}, 0, errDown, time.Time{}, 0)
		// 100+200+400+800 ms, then 995 retries of 1 s: 999 retries.
		if want := (1500*ms + 995*time.Second) / 999; d.Delay < want-1 || d.Delay > want+1 {
			t.Errorf("wait %v, want %v", d.Delay, want)
		}
		// With no practical limit, the pace is the cap's.
		d = refusedWait(t, Config{MaxAttempts: math.MaxInt, Backoff: sched(backoff.None)}, 0, errDown, time.Time{}, 0)
		if d.Delay < time.Second-ms || d.Delay > time.Second {
			t.Errorf("wait %v, want the cap's 1s", d.Delay)
		}
	})
	t.Run("a server delay longer than the draw is the floor", func(t *testing.T) {
		err := &serverDelayErr{d: 2 * time.Second}
		d := refusedWait(t, Config{MaxAttempts: 3, Backoff: sched(backoff.Full), ServerJitter: -1}, 0, err, time.Time{}, 0)
		if d.Delay != 2*time.Second {
			t.Errorf("wait %v, want the server's 2s", d.Delay)
		}
	})
}

// serverDelayErr is an error that carries a server-directed delay.
type serverDelayErr struct{ d time.Duration }

func (e *serverDelayErr) Error() string             { return "slow down" }
func (e *serverDelayErr) RetryAfter() time.Duration { return e.d }

// Whatever the draw and the deadline, a refused retry's wait ends before
// the deadline, and is never waited when the refused retry's own delay
// does not fit.
func TestRefusedWaitBeforeDeadline(t *testing.T) {
	cfg := Config{MaxAttempts: 8, Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Cap: 10 * time.Second}}
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 2))
		for range 5000 {
			u := r.Uint64()
			deadline := t0.Add(time.Duration(r.Int64N(int64(20 * time.Second))))
			own := refusedWait(t, Config{MaxAttempts: 8, Backoff: cfg.Backoff, OnBudgetExhausted: WaitRetryDelay}, 0, errDown, time.Time{}, u)
			cfg.Budget = refuseAll{}
			c := mustNew(t, cfg).Begin(false)
			_ = c.Admit(context.Background())
			d := c.Done(t0, deadline, errDown, u)
			switch {
			case d.Reason == ErrDeadline:
				if own.Delay < deadline.Sub(t0) {
					t.Fatalf("seed %d: ErrDeadline with %v left, though the retry's own %v fits", seed, deadline.Sub(t0), own.Delay)
				}
			case d.Reason != ErrBudgetExhausted || !d.Wait:
				t.Fatalf("seed %d: Decision %+v, want a wait and ErrBudgetExhausted", seed, d)
			case !t0.Add(d.Delay).Before(deadline) || d.Delay < 0:
				t.Fatalf("seed %d: wait %v with %v left, want less than what is left", seed, d.Delay, deadline.Sub(t0))
			}
		}
	}
}

// TestClosedPopulationLoad: 20 callers call in a loop, thinking 5 ms
// between calls; a success takes 10 ms, and a failure comes back at once,
// as an overloaded server's 503 does. While the dependency fails
// everything, the default budget empties. From then on, with ReturnAtOnce,
// every caller comes straight back: the dependency sees several times its
// healthy load. By default a refused call waits the rest of its schedule,
// and the load with the budget is below the load without one. With
// WaitRetryDelay a refused call waits one retry's delay only: with 3
// attempts that is still below the load without a budget, but with 8 the
// callers come back long before they would have without a budget, and the
// budget multiplies the load it was meant to cut. Checked on several
// seeds.
func TestClosedPopulationLoad(t *testing.T) {
	const callers, healthy, failing = 20, 2 * time.Second, 20 * time.Second
	run := func(seed uint64, attempts int, mode BudgetExhaustion, b budget.Budget) (before, during float64) {
		synctest.Test(t, func(t *testing.T) {
			p := mustNew(t, Config{MaxAttempts: attempts, OnBudgetExhausted: mode, Budget: b, Rand: seeded(seed)})
			start := time.Now()
			var attemptsBefore, attemptsDuring atomic.Int64
			dependency := func(ctx context.Context) error {
				if time.Since(start) < healthy {
					attemptsBefore.Add(1)
					time.Sleep(10 * time.Millisecond)
					return nil
				}
				attemptsDuring.Add(1)
				return errDown
			}
			ctx, cancel := context.WithTimeout(context.Background(), healthy+failing)
			defer cancel()
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					for ctx.Err() == nil {
						_ = p.Do(ctx, dependency)
						time.Sleep(5 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			before = float64(attemptsBefore.Load()) / healthy.Seconds()
			during = float64(attemptsDuring.Load()) / failing.Seconds()
		})
		return before, during
	}
	for _, attempts := range []int{defaultMaxAttempts, 8} {
		for seed := range uint64(3) {
			before, during := run(seed, attempts, WaitSchedule, nil)
			_, unlimited := run(seed, attempts, WaitSchedule, budget.Unlimited)
			_, own := run(seed, attempts, WaitRetryDelay, nil)
			fbefore, fduring := run(seed, attempts, ReturnAtOnce, nil)
			t.Logf("%d attempts, seed %d: attempts/s while failing over while healthy: default %.2fx, no budget %.2fx, WaitRetryDelay %.2fx, ReturnAtOnce %.2fx",
				attempts, seed, during/before, unlimited/before, own/before, fduring/fbefore)
			if during > unlimited {
				t.Errorf("%d attempts, seed %d: default: %.0f attempts/s while failing, more than the %.0f/s without a budget", attempts, seed, during, unlimited)
			}
			if attempts == 8 && own <= 2*unlimited {
				t.Errorf("%d attempts, seed %d: WaitRetryDelay: %.0f attempts/s while failing, under twice the %.0f/s without a budget; the test no longer shows why it is not the default", attempts, seed, own, unlimited)
			}
			if fduring < 2*fbefore {
				t.Errorf("%d attempts, seed %d: ReturnAtOnce: %.0f attempts/s while failing, %.2fx the healthy %.0f/s; the test no longer shows the herd", attempts, seed, fduring, fduring/fbefore, fbefore)
			}
		}
	}
}

// FuzzRefusedWait: whatever the schedule, the attempt limit, the draw and
// the deadline, a refused retry's wait is never negative, never longer
// than the longest delay left (or the refused retry's own, if longer),
// and ends before the deadline; the mean of the delays left neither
// overflows nor collapses under a huge attempt limit.
func FuzzRefusedWait(f *testing.F) {
	f.Add(int64(50*time.Millisecond), int64(20*time.Second), uint8(0), 3, uint64(0), int64(0), false)
	f.Add(int64(time.Second), int64(time.Hour), uint8(1), math.MaxInt32, uint64(math.MaxUint64), int64(90*time.Second), true)
	f.Add(int64(1), int64(math.MaxInt64), uint8(3), math.MaxInt, uint64(12345), int64(time.Millisecond), false)
	f.Fuzz(func(t *testing.T, base, capd int64, jitter uint8, attempts int, u uint64, left int64, throttled bool) {
		sched := backoff.Schedule{Base: time.Duration(base), ThrottledBase: time.Duration(base), Cap: time.Duration(capd), Jitter: backoff.Jitter(jitter % 4)}
		cfg := Config{MaxAttempts: attempts, Backoff: sched, Budget: refuseAll{}}
		if cfg.Validate() != nil || attempts < 2 {
			return
		}
		var deadline time.Time
		if left > 0 {
			deadline = t0.Add(time.Duration(left))
		}
		err := errDown
		if throttled {
			err = Judge(errDown, Verdict{Class: failure.Throttled})
		}
		p := mustNew(t, cfg)
		c := p.Begin(false)
		_ = c.Admit(context.Background())
		d := c.Done(t0, deadline, err, u)
		cfg.OnBudgetExhausted = WaitRetryDelay
		own := mustNew(t, cfg).Begin(false)
		_ = own.Admit(context.Background())
		o := own.Done(t0, deadline, err, u)
		switch {
		case d.Reason == ErrDeadline:
			if o.Reason != ErrDeadline {
				t.Fatalf("ErrDeadline, but the refused retry's own delay %v fits", o.Delay)
			}
		case d.Reason != ErrBudgetExhausted || !d.Wait:
			t.Fatalf("Decision %+v, want a wait and ErrBudgetExhausted", d)
		case d.Delay < 0:
			t.Fatalf("wait %v, negative", d.Delay)
		case d.Delay > max(o.Delay, sched.Temp(attempts-2, throttled)):
			t.Fatalf("wait %v, longer than the longest delay left %v and the refused retry's own %v", d.Delay, sched.Temp(attempts-2, throttled), o.Delay)
		case !deadline.IsZero() && !t0.Add(d.Delay).Before(deadline):
			t.Fatalf("wait %v with %v left: it reaches the deadline", d.Delay, deadline.Sub(t0))
		}
	})
}

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
