package timeout_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/lognormal"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/timeout"
)

// These tests drive the adaptive timeout through a retry.Policy, which
// imports this package (retry.Config.Timeouts is a timeout.Source), so
// they live outside it.

func mustAdaptive(t testing.TB) *timeout.Adaptive {
	return configtest.Must(timeout.New(timeout.Config{}))(t)
}

// TestWithRetry plugs the timeout into retry.Config.Timeouts: once it has
// learnt that calls take about 20 ms, an attempt that hangs is cut off at
// about 1.5 x p99.9 and retried, well before the 10 s ceiling.
func TestWithRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustAdaptive(t)
		p, err := retry.New(retry.Config{Timeouts: a, Backoff: backoff.Schedule{Immediate: true}})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 8))
		call := func(d time.Duration) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				select {
				case <-time.After(d):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		for range 5000 {
			if err := p.Do(context.Background(), call(lognormal.Draw(r, 20*time.Millisecond, 0.3))); err != nil {
				t.Fatal(err)
			}
		}
		learnt := a.AttemptTimeout()
		attempts := 0
		start := time.Now()
		err = p.Do(context.Background(), func(ctx context.Context) error {
			attempts++
			if attempts == 1 {
				return call(time.Hour)(ctx) // hangs
			}
			return call(20 * time.Millisecond)(ctx)
		})
		took := time.Since(start)
		t.Logf("adaptive timeout %v; a hung first attempt cost %v in all", learnt, took)
		if err != nil || attempts != 2 {
			t.Fatalf("Do = %v after %d attempts, want success on the second", err, attempts)
		}
		if learnt > 100*time.Millisecond || took != learnt+20*time.Millisecond {
			t.Errorf("hung attempt cut after %v (timeout %v), want the learnt timeout, well under 100ms", took-20*time.Millisecond, learnt)
		}
	})
}

// TestRecoversFromSlowdown makes a dependency that answered in 5 ms
// answer in 50 ms: every attempt now times out at the learnt 10 ms, so no
// success reaches the estimator. After WidenAfter timeouts in a row the
// timeout doubles, until the answers fit (10, 20, 40, 80 ms: the tenth
// call succeeds), and the calls after that all succeed. When the
// dependency is fast again, successes narrow the timeout back.
func TestRecoversFromSlowdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustAdaptive(t)
		for range 5000 {
			a.Observe(5*time.Millisecond, true)
		}
		if got := a.AttemptTimeout(); got != timeout.DefaultFloor {
			t.Fatalf("learnt timeout %v, want the floor, %v", got, timeout.DefaultFloor)
		}
		p, err := retry.New(retry.Config{Timeouts: a, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		latency := 50 * time.Millisecond
		call := func(ctx context.Context) error {
			select {
			case <-time.After(latency):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		first := -1
		for i := range 100 {
			err := p.Do(context.Background(), call)
			if err == nil && first < 0 {
				first = i
			}
			if err != nil && first >= 0 {
				t.Fatalf("call %d failed after call %d succeeded: %v", i, first, err)
			}
		}
		t.Logf("first success on call %d, timeout then %v", first+1, a.AttemptTimeout())
		if first != 3*timeout.DefaultWidenAfter {
			t.Errorf("first success on call %d, want %d (three doublings of %d timeouts)", first+1, 3*timeout.DefaultWidenAfter+1, timeout.DefaultWidenAfter)
		}
		// Widened to 80 ms, then narrowed toward 1.5 x the 50 ms answers.
		if got := a.AttemptTimeout(); got < 75*time.Millisecond || got > 80*time.Millisecond {
			t.Errorf("widened timeout %v, want in [75ms, 80ms]", got)
		}
		latency = 5 * time.Millisecond
		for range 200 {
			if err := p.Do(context.Background(), call); err != nil {
				t.Fatal(err)
			}
		}
		if got := a.AttemptTimeout(); got > 2*timeout.DefaultFloor {
			t.Errorf("timeout %v after 200 fast answers, want back near the floor, %v", got, timeout.DefaultFloor)
		}
	})
}
