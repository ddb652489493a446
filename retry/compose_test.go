package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/draws"
	"github.com/unherd/unherd/internal/tally"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/throttle"
)

// dependency is a fake remote service: it fails with err while down (or
// while downNow reports true, if set).
type dependency struct {
	mu      sync.Mutex
	down    bool
	downNow func() bool
	err     error
	calls   int
}

func (d *dependency) call(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.down || (d.downNow != nil && d.downNow()) {
		return d.err
	}
	return nil
}

func (d *dependency) set(down bool) {
	d.mu.Lock()
	d.down = down
	d.mu.Unlock()
}

var errUnavailableDep = errors.New("503 service unavailable")

// TestComposeBreaker: the breaker opens after failures and the loop then
// stops at once with ErrRejected, without retrying the rejection; while
// open, calls never reach the dependency; after the open period a probe
// closes it again once the dependency has recovered.
func TestComposeBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dep := &dependency{down: true, err: errUnavailableDep}
		b, err := breaker.New(breaker.Settings{ConsecutiveFailures: 4, OpenDuration: 10 * time.Second, OpenJitter: -1})
		if err != nil {
			t.Fatal(err)
		}
		guard, p := guarded(t, b, 1, 2)
		ctx := context.Background()

		// Call 1: three failed attempts, three consecutive failures.
		err = p.Do(ctx, dep.call)
		if !errors.Is(err, retry.ErrAttemptsExhausted) || attempts(err) != 3 {
			t.Fatalf("call 1: %v, want attempts exhausted after 3", err)
		}
		// Call 2: the first attempt is the fourth failure and trips the
		// breaker; the second is rejected, and the loop stops there.
		err = p.Do(ctx, dep.call)
		if !errors.Is(err, retry.ErrRejected) || !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, errUnavailableDep) {
			t.Fatalf("call 2: %v, want rejected by the open breaker, keeping the last error", err)
		}
		if attempts(err) != 1 || dep.calls != 4 {
			t.Fatalf("call 2: %d attempts, %d dependency calls in all; want 1 and 4", attempts(err), dep.calls)
		}
		// Call 3, while open: rejected before any attempt.
		start := time.Now()
		err = p.Do(ctx, dep.call)
		if !errors.Is(err, breaker.ErrOpen) || attempts(err) != 0 || dep.calls != 4 || time.Since(start) != 0 {
			t.Fatalf("call 3: %v after %d attempts and %v, %d dependency calls; want an immediate rejection", err, attempts(err), time.Since(start), dep.calls)
		}

		// The dependency recovers; after the open period a probe closes
		// the breaker.
		dep.set(false)
		time.Sleep(10 * time.Second)
		if err := p.Do(ctx, dep.call); err != nil {
			t.Fatalf("call 4 after recovery: %v", err)
		}
		if b.State() != breaker.Closed {
			t.Fatalf("breaker %v after a successful probe, want closed", b.State())
		}
		if err := p.Do(ctx, dep.call); err != nil {
			t.Fatalf("call 5: %v", err)
		}

		// The breaker saw every attempt, retries included.
		c := guard.Counts()
		if c.Admitted != dep.calls || c.Done() != dep.calls || c.Rejected != 2 {
			t.Fatalf("breaker: %d admitted, %d done, %d rejected; dependency saw %d calls, want equal and 2 rejections",
				c.Admitted, c.Done(), c.Rejected, dep.calls)
		}
		if c.Failed != 4 || c.Succeeded != 2 {
			t.Fatalf("breaker: %d failures %d successes reported, want 4 and 2", c.Failed, c.Succeeded)
		}
	})
}

// TestComposeThrottle: as the dependency stops accepting, the adaptive
// throttle starts rejecting locally; the rejections are never retried and
// never reach the dependency.
func TestComposeThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dep := &dependency{err: retry.Judge(errors.New("429 too many requests"), retry.Verdict{Class: failure.Throttled})}
		th, err := throttle.NewAdaptive(throttle.AdaptiveSettings{Rand: rand.NewPCG(3, 4)})
		if err != nil {
			t.Fatal(err)
		}
		guard, p := guarded(t, th, 5, 6)
		ctx := context.Background()
		for range 20 {
			if err := p.Do(ctx, dep.call); err != nil {
				t.Fatal(err)
			}
		}
		dep.set(true)
		var rejectedCalls, firstRejection, attemptsSum int
		for i := range 50 {
			err := p.Do(ctx, dep.call)
			attemptsSum += attempts(err)
			switch {
			case errors.Is(err, retry.ErrRejected):
				if !errors.Is(err, throttle.ErrThrottled) {
					t.Fatalf("call %d rejected by %v, want ErrThrottled", i, err)
				}
				if rejectedCalls == 0 {
					firstRejection = i
				}
				rejectedCalls++
			case !errors.Is(err, retry.ErrAttemptsExhausted):
				t.Fatalf("call %d: %v", i, err)
			}
		}
		// 20 accepts allow 40 requests before any rejection (K = 2): the
		// 20 accepted ones and 20 failed attempts. The first 7 failing
		// calls (21 attempts; the probability turns positive only after
		// the last of them) are never rejected.
		if rejectedCalls == 0 || firstRejection < 7 {
			t.Fatalf("%d calls rejected, the first at call %d; want some, none before call 7", rejectedCalls, firstRejection)
		}
		failedAttempts := dep.calls - 20
		if attemptsSum != failedAttempts || failedAttempts >= 150 {
			t.Fatalf("errors report %d attempts, the dependency saw %d failing calls (of at most 150)", attemptsSum, failedAttempts)
		}
		// The throttle saw every attempt, and each rejection ended a call.
		c := guard.Counts()
		if c.Admitted != dep.calls || c.Done() != dep.calls || c.Rejected != rejectedCalls {
			t.Fatalf("throttle: %d admitted, %d done, %d rejected; dependency %d calls, %d calls rejected",
				c.Admitted, c.Done(), c.Rejected, dep.calls, rejectedCalls)
		}
		if p := th.Probability(); p <= 0 {
			t.Fatalf("rejection probability %v after 50 throttled calls, want > 0", p)
		}
	})
}

// TestComposeBreakerAndThrottle: both guards in one policy see every
// attempt. The throttle comes first, so an attempt the breaker rejects
// reaches the throttle as abandoned and does not count against the
// dependency twice.
func TestComposeBreakerAndThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Up for the first 2 s of every 4 s, down for the rest.
		start := time.Now()
		dep := &dependency{err: errUnavailableDep, downNow: func() bool { return time.Since(start)%(4*time.Second) >= 2*time.Second }}
		b, err := breaker.New(breaker.Settings{ConsecutiveFailures: 5, OpenDuration: time.Second, Rand: rand.NewPCG(7, 8)})
		if err != nil {
			t.Fatal(err)
		}
		th, err := throttle.NewAdaptive(throttle.AdaptiveSettings{Rand: rand.NewPCG(9, 10)})
		if err != nil {
			t.Fatal(err)
		}
		tg, bg := &tally.Guard{Inner: th}, &tally.Guard{Inner: b}
		p, err := retry.New(retry.Config{
			MaxAttempts: 4,
			Budget:      budget.Unlimited,
			Guards:      []admission.Guard{tg, bg},
			Rand:        draws.NewSeeded(11, 12),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 40 {
					_ = p.Do(ctx, dep.call)
					time.Sleep(200 * time.Millisecond)
				}
			}()
		}
		wg.Wait()

		thc, brc := tg.Counts(), bg.Counts()
		if brc.Admitted != dep.calls || brc.Done() != dep.calls || brc.Abandoned != 0 {
			t.Fatalf("breaker: %d admitted, %d done (%d abandoned); dependency saw %d calls",
				brc.Admitted, brc.Done(), brc.Abandoned, dep.calls)
		}
		if thc.Admitted != dep.calls+brc.Rejected || thc.Done() != thc.Admitted || thc.Abandoned != brc.Rejected {
			t.Fatalf("throttle: %d admitted, %d done, %d abandoned; dependency %d calls, breaker rejected %d",
				thc.Admitted, thc.Done(), thc.Abandoned, dep.calls, brc.Rejected)
		}
		t.Logf("dependency %d calls; throttle %d admitted %d rejected; breaker %d admitted %d rejected, generation %d",
			dep.calls, thc.Admitted, thc.Rejected, brc.Admitted, brc.Rejected, b.Generation())
		if brc.Rejected == 0 || b.Generation() < 3 {
			t.Fatalf("breaker rejected %d attempts, generation %d: the scenario never tripped it", brc.Rejected, b.Generation())
		}
	})
}

// guarded returns g, counted, and a policy of 3 attempts without a budget
// that g guards, drawing from a source seeded with s1 and s2.
func guarded(t *testing.T, g admission.Guard, s1, s2 uint64) (*tally.Guard, *retry.Policy) {
	t.Helper()
	guard := &tally.Guard{Inner: g}
	p, err := retry.New(retry.Config{MaxAttempts: 3, Budget: budget.Unlimited, Guards: []admission.Guard{guard}, Rand: draws.NewSeeded(s1, s2)})
	if err != nil {
		t.Fatal(err)
	}
	return guard, p
}

func attempts(err error) int {
	var re *retry.Error
	if errors.As(err, &re) {
		return re.Attempts
	}
	return 0
}

// TestComposeRateLimiter: with the AWS adaptive rate limiter as a guard,
// throttled attempts are paced rather than failed: the retries wait for
// send tokens (the schedule here waits nothing), and a wait that would
// pass the caller's deadline ends the call at once with ErrRejected.
//
// Attempt 1 at 0 s is throttled: the limiter is enabled at its floor of
// 0.5 tokens/s with an empty bucket. Attempt 2 waits 2 s and is throttled
// again (the measured rate, 0.8/s, cut by 0.7 is below the floor, so the
// rate stays 0.5/s). Attempt 3 waits another 2 s.
func TestComposeRateLimiter(t *testing.T) {
	tests := []struct {
		name         string
		timeout      time.Duration // 0: none
		wantErr      error         // nil: success
		wantAttempts int
		wantElapsed  time.Duration
	}{
		{"paced retries succeed", 0, nil, 3, 4 * time.Second},
		{"a wait past the deadline is refused", 3 * time.Second, throttle.ErrRateLimited, 2, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				throttledErr := retry.Judge(errors.New("429 too many requests"), retry.Verdict{Class: failure.Throttled})
				calls := 0
				op := func(context.Context) error {
					calls++
					if calls <= 2 {
						return throttledErr
					}
					return nil
				}
				rl, err := throttle.NewRateLimiter(throttle.RateLimiterSettings{})
				if err != nil {
					t.Fatal(err)
				}
				guard := &tally.Guard{Inner: rl}
				p, err := retry.New(retry.Config{
					MaxAttempts: 3,
					Backoff:     backoff.Schedule{Immediate: true},
					Budget:      budget.Unlimited,
					Guards:      []admission.Guard{guard},
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if tc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.timeout)
					defer cancel()
				}
				start := time.Now()
				err = p.Do(ctx, op)
				elapsed := time.Since(start)
				switch {
				case tc.wantErr == nil && err != nil:
					t.Fatalf("Do: %v", err)
				case tc.wantErr != nil && (!errors.Is(err, retry.ErrRejected) || !errors.Is(err, tc.wantErr)):
					t.Fatalf("Do: %v, want ErrRejected wrapping %v", err, tc.wantErr)
				}
				if calls != tc.wantAttempts || elapsed != tc.wantElapsed {
					t.Fatalf("%d attempts in %v, want %d in %v", calls, elapsed, tc.wantAttempts, tc.wantElapsed)
				}
				c := guard.Counts()
				if c.Admitted != calls || c.Done() != calls {
					t.Fatalf("limiter: %d admitted, %d done; %d attempts", c.Admitted, c.Done(), calls)
				}
			})
		})
	}
}
