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

// refuseAll is a budget that refuses every retry.
type refuseAll struct{}

func (refuseAll) Withdraw(Class) bool   { return false }
func (refuseAll) Record(budget.Attempt) {}

// A retry the budget refused still waits its delay before Do returns,
// unless ReturnAtOnce; the wait never passes the deadline.
func TestRefusedRetryWaits(t *testing.T) {
	fixed := backoff.Schedule{Base: 100 * time.Millisecond, Constant: true, Jitter: backoff.None}
	tests := []struct {
		name     string
		failFast bool
		deadline time.Duration // 0: none
		want     time.Duration
		reason   error
	}{
		{"default: waits the refused retry's delay", false, 0, 100 * time.Millisecond, ErrBudgetExhausted},
		{"ReturnAtOnce: returns at once", true, 0, 0, ErrBudgetExhausted},
		{"a deadline before the wait ends: at once", false, 50 * time.Millisecond, 0, ErrDeadline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := mustNew(t, Config{Budget: refuseAll{}, Backoff: fixed, OnBudgetExhausted: onExhausted(tc.failFast)})
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
	c := mustNew(t, Config{Budget: refuseAll{}, Backoff: fixed}).Begin(false)
	_ = c.Admit(context.Background())
	if d := c.Done(time.Time{}, time.Time{}, errDown, 0); d.Reason != ErrBudgetExhausted || !d.Wait || d.Delay != 100*time.Millisecond {
		t.Errorf("Decision %+v, want ErrBudgetExhausted, Wait, Delay 100ms", d)
	}
	c = mustNew(t, Config{Budget: refuseAll{}, Backoff: fixed, OnBudgetExhausted: ReturnAtOnce}).Begin(false)
	_ = c.Admit(context.Background())
	if d := c.Done(time.Time{}, time.Time{}, errDown, 0); d.Wait {
		t.Errorf("Decision %+v with ReturnAtOnce, want no Wait", d)
	}
}

// onExhausted is ReturnAtOnce when failFast, else the default.
func onExhausted(failFast bool) BudgetExhaustion {
	if failFast {
		return ReturnAtOnce
	}
	return BudgetExhaustionDefault
}

// TestClosedPopulationLoad: 20 callers call in a loop, thinking 5 ms
// between calls; a success takes 10 ms, and a failure comes back at once,
// as an overloaded server's 503 does. While the dependency fails
// everything, the default budget empties, and from then on, with
// ReturnAtOnce, every caller comes straight back: the dependency sees several
// times its healthy load. By default each refused retry still waits its
// delay, and the load falls below the healthy one.
func TestClosedPopulationLoad(t *testing.T) {
	const callers, healthy, failing = 20, 2 * time.Second, 5 * time.Second
	run := func(failFast bool) (before, during float64) {
		synctest.Test(t, func(t *testing.T) {
			p := mustNew(t, Config{OnBudgetExhausted: onExhausted(failFast)})
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
	before, during := run(false)
	fbefore, fduring := run(true)
	t.Logf("attempts/s while healthy, then failing: default %.0f, %.0f (%.2fx); ReturnAtOnce %.0f, %.0f (%.2fx)",
		before, during, during/before, fbefore, fduring, fduring/fbefore)
	if during > 1.2*before {
		t.Errorf("default: %.0f attempts/s while failing, %.2fx the healthy %.0f/s, want at most 1.2x", during, during/before, before)
	}
	if fduring < 2*fbefore {
		t.Errorf("ReturnAtOnce: %.0f attempts/s while failing, %.2fx the healthy %.0f/s; the test no longer shows the herd", fduring, fduring/fbefore, fbefore)
	}
}
