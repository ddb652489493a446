package retry

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
)

// With an attempt timeout, the successful attempt's context outlives the
// call: what the value holds stays usable after the timeout would have
// fired. A failed attempt's context ends when the attempt returns.
func TestAttemptContextOutlivesSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{AttemptTimeout: time.Second, Backoff: backoff.Schedule{Immediate: true}})
		var ctxs []context.Context
		v, err := DoValue(t.Context(), p, func(ctx context.Context) (context.Context, error) {
			ctxs = append(ctxs, ctx)
			if len(ctxs) == 1 {
				return ctx, errBoom
			}
			return ctx, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if ctxs[0].Err() == nil {
			t.Error("the failed attempt's context is still live")
		}
		time.Sleep(2 * time.Second) // past the attempt timeout
		if v.Err() != nil {
			t.Fatalf("the successful attempt's context ended: %v", context.Cause(v))
		}
	})
}

// The attempt's context reports the earlier of the caller's deadline and
// its own, ends with DeadlineExceeded when its timeout fires, and ends
// when the caller cancels during the attempt.
func TestAttemptContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{AttemptTimeout: time.Second, MaxAttempts: 1})
		start := time.Now()
		for _, tc := range []struct {
			callerTimeout time.Duration
			want          time.Duration
		}{{time.Hour, time.Second}, {300 * time.Millisecond, 300 * time.Millisecond}} {
			ctx, cancel := context.WithTimeout(t.Context(), tc.callerTimeout)
			_ = p.Do(ctx, func(ctx context.Context) error {
				d, ok := ctx.Deadline()
				if !ok || d.Sub(start) != tc.want {
					t.Errorf("caller timeout %v: attempt deadline %v after start, want %v", tc.callerTimeout, d.Sub(start), tc.want)
				}
				<-ctx.Done()
				if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
					t.Errorf("caller timeout %v: attempt ended with %v, want DeadlineExceeded", tc.callerTimeout, ctx.Err())
				}
				return ctx.Err()
			})
			cancel()
			start = time.Now()
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("caller left")
		err := p.Do(ctx, func(actx context.Context) error {
			cancel(cause)
			<-actx.Done()
			return actx.Err()
		})
		if !errors.Is(err, ErrCancelled) || !errors.Is(err, cause) {
			t.Fatalf("err = %v, want ErrCancelled with the caller's cause", err)
		}
	})
}

// OnResult retries a result that says "not yet", and hands back the last
// one when attempts run out.
func TestOnResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{MaxAttempts: 4, Backoff: backoff.Schedule{Immediate: true}})
		polls := 0
		poll := func(context.Context) (string, error) {
			polls++
			if polls < 3 {
				return "pending", nil
			}
			return "done", nil
		}
		pending := func(s string) bool { return s == "pending" }
		v, err := DoValue(t.Context(), p, OnResult(poll, pending))
		if v != "done" || err != nil || polls != 3 {
			t.Fatalf("got %q, %v after %d polls; want done after 3", v, err, polls)
		}
		polls = -10
		v, err = DoValue(t.Context(), p, OnResult(poll, pending))
		if v != "pending" || !errors.Is(err, ErrAttemptsExhausted) || !errors.Is(err, ErrRetryableResult) {
			t.Fatalf("got %q, %v; want the last pending result and ErrAttemptsExhausted", v, err)
		}
	})
}

// OnGiveUp runs once for every call that ends without success, with the
// reason and the last error, and never for a success.
func TestOnGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []string
		p := mustNew(t, Config{Backoff: backoff.Schedule{Immediate: true}, Guards: []Guard{&fakeGuard{allow: 4}},
			OnGiveUp: func(e GiveUpEvent) {
				events = append(events, e.Reason.Error()+" after "+string(rune('0'+e.Attempts))+": "+errString(e.Err))
			}})
		calls := 0
		_ = p.Do(t.Context(), failing(0, errBoom, &calls))                // succeeds
		_ = p.Do(t.Context(), failing(9, MarkPermanent(errBoom), &calls)) // permanent
		_ = p.Do(t.Context(), failing(9, errBoom, &calls))                // attempts 2, 3, 4: the guard rejects the third
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_ = p.Do(ctx, func(context.Context) error { return errBoom })
		want := []string{
			"retry: permanent error after 1: boom",
			"retry: rejected locally after 2: boom",
			"retry: cancelled after 0: <nil>", // the guard refused, but the caller had left
		}
		if diff := cmp.Diff(want, events); diff != "" {
			t.Fatal(diff)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// A call the empty budget stops waits before it returns: by default at
// the pace of the retries it had left (50 and 100 ms, 75 ms on average,
// at the highest draw), with
// WaitRetryDelay or WaitThenReturn the refused retry's delay; with
// ReturnAtOnce, it returns at once.
func TestWaitThenReturn(t *testing.T) {
	for _, tc := range []struct {
		mode BudgetExhaustion
		want time.Duration
	}{{BudgetExhaustionDefault, 75 * time.Millisecond}, {ReturnAtOnce, 0}, {WaitThenReturn, 50 * time.Millisecond}, {WaitRetryDelay, 50 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			b := &fakeBudget{allow: 0}
			p := mustNew(t, Config{Budget: b, OnBudgetExhausted: tc.mode, Rand: constSource(math.MaxUint64)})
			start := time.Now()
			err := p.Do(t.Context(), func(context.Context) error { return errBoom })
			if !errors.Is(err, ErrBudgetExhausted) {
				t.Fatalf("err = %v, want ErrBudgetExhausted", err)
			}
			if got := time.Since(start); got != tc.want {
				t.Errorf("mode %d: returned after %v, want %v", tc.mode, got, tc.want)
			}
		})
	}
}

// constSource is a rand.Source that always draws u.
type constSource uint64

func (s constSource) Uint64() uint64 { return uint64(s) }
