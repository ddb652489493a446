package core

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
)

// An attempt that never watches its context but fails once its timeout
// has passed (as one whose socket deadline came from ctx.Deadline does)
// timed out: its error is ErrAttemptTimeout and classifies as Timeout. One
// that fails before its timeout did not.
func TestAttemptTimeoutUnwatched(t *testing.T) {
	for _, tc := range []struct {
		name    string
		takes   time.Duration
		timeout bool
	}{
		{"fails after the timeout", 1500 * time.Millisecond, true},
		{"fails at the timeout", time.Second, true},
		{"fails before the timeout", time.Second - time.Nanosecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var classes []failure.Class
				p := mustNew(t, Config{AttemptTimeout: time.Second, MaxAttempts: 2, Backoff: backoff.Schedule{Immediate: true},
					Observer: observe.On(observe.Retry, func(e observe.Event) { classes = append(classes, e.Class) })})
				err := p.Do(t.Context(), func(ctx context.Context) error {
					time.Sleep(tc.takes)
					return errBoom
				})
				if !errors.Is(err, errBoom) || errors.Is(err, ErrAttemptTimeout) != tc.timeout {
					t.Fatalf("err = %v, want errBoom, wrapped with ErrAttemptTimeout: %v", err, tc.timeout)
				}
				want := failure.Transient
				if tc.timeout {
					want = failure.Timeout
				}
				if diff := cmp.Diff([]failure.Class{want}, classes); diff != "" {
					t.Error(diff)
				}
			})
		})
	}
}

// The attempt context's Err and Cause after its timeout, whether or not
// the attempt watched its Done channel first.
func TestAttemptContextCause(t *testing.T) {
	for _, watched := range []bool{false, true} {
		t.Run(map[bool]string{false: "unwatched", true: "watched"}[watched], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := mustNew(t, Config{AttemptTimeout: time.Second, MaxAttempts: 1})
				_ = p.Do(t.Context(), func(ctx context.Context) error {
					if watched {
						<-ctx.Done()
					} else {
						time.Sleep(time.Second)
					}
					if err := ctx.Err(); err != context.DeadlineExceeded {
						t.Errorf("Err() = %v, want DeadlineExceeded", err)
					}
					if cause := context.Cause(ctx); cause != ErrAttemptTimeout {
						t.Errorf("Cause() = %v, want ErrAttemptTimeout", cause)
					}
					return ctx.Err()
				})
			})
		})
	}
}

// A context derived from the attempt's, as an HTTP or gRPC client derives
// one for each request, ends at the attempt timeout as a child of a
// context.WithTimeout does: with DeadlineExceeded and the attempt's cause.
func TestAttemptDerivedContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{AttemptTimeout: time.Second, MaxAttempts: 1})
		err := p.Do(t.Context(), func(ctx context.Context) error {
			derived, cancel := context.WithCancel(ctx)
			defer cancel()
			<-derived.Done()
			if cause := context.Cause(derived); cause != ErrAttemptTimeout {
				t.Errorf("derived Cause() = %v, want ErrAttemptTimeout", cause)
			}
			return derived.Err()
		})
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrAttemptTimeout) {
			t.Errorf("err = %v, want the derived context's DeadlineExceeded, as an attempt timeout", err)
		}
	})
}

// The successful attempt's context, watched or not, follows the caller's
// context no more: the caller's cancel after the call does not reach it,
// and it reports no deadline.
func TestAttemptContextDetached(t *testing.T) {
	for _, watched := range []bool{false, true} {
		t.Run(map[bool]string{false: "unwatched", true: "watched"}[watched], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := mustNew(t, Config{AttemptTimeout: time.Second})
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				v, err := DoValue(ctx, p, func(ctx context.Context) (context.Context, error) {
					if watched {
						ctx.Done()
					}
					return ctx, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				cancel()
				time.Sleep(2 * time.Second)
				if err := v.Err(); err != nil {
					t.Errorf("Err() = %v after the caller's cancel, want nil", err)
				}
				select {
				case <-v.Done():
					t.Error("Done() closed after the caller's cancel")
				default:
				}
				if d, ok := v.Deadline(); ok {
					t.Errorf("Deadline() = %v, true; want none", d)
				}
			})
		})
	}
}

// A first-attempt success under an attempt timeout allocates the attempt
// context alone, when the attempt does not watch it.
func TestAttemptTimeoutAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	p := mustNew(t, Config{AttemptTimeout: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fn := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(100, func() { _ = p.Do(ctx, fn) }); n != 1 {
		t.Errorf("%v allocations per call, want 1", n)
	}
}

// samples is a TimeoutSource with a fixed timeout that records what it is
// told.
type samples struct {
	timeout time.Duration
	got     []sample
}

type sample struct {
	latency time.Duration
	ok      bool
}

func (s *samples) AttemptTimeout() time.Duration          { return s.timeout }
func (s *samples) Observe(latency time.Duration, ok bool) { s.got = append(s.got, sample{latency, ok}) }

// Without a timeout or a TimeoutSource an attempt is the caller's context,
// and End hands the error back as it is.
func TestStartAttemptUnbounded(t *testing.T) {
	p := mustNew(t, Config{})
	ctx := t.Context()
	a := p.StartAttempt(ctx)
	if a.Context() != ctx {
		t.Fatal("Context() is not the caller's context")
	}
	if err := a.End(errBoom); err != errBoom {
		t.Fatalf("End(errBoom) = %v, want errBoom itself", err)
	}
}

// An attempt its timeout ends fails with ErrAttemptTimeout, its context
// cancelled, and the TimeoutSource hears the failure at the timeout; a
// successful attempt's context outlives End, released from the caller's.
func TestStartAttemptTimeoutSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &samples{timeout: time.Second}
		p := mustNew(t, Config{Timeouts: src})
		a := p.StartAttempt(t.Context())
		<-a.Context().Done()
		if !a.TimedOut() {
			t.Error("TimedOut() = false after the timeout")
		}
		err := a.End(context.Cause(a.Context()))
		if !errors.Is(err, ErrAttemptTimeout) || DefaultClassify(err) != failure.Timeout {
			t.Errorf("End = %v (class %v), want ErrAttemptTimeout, a Timeout", err, DefaultClassify(err))
		}

		parent, cancel := context.WithCancel(t.Context())
		b := p.StartAttempt(parent)
		time.Sleep(10 * time.Millisecond)
		if err := b.End(nil); err != nil {
			t.Fatalf("End(nil) = %v", err)
		}
		cancel()
		time.Sleep(time.Hour)
		if b.Context().Err() != nil {
			t.Error("a successful attempt's context ended with its caller's or its timeout")
		}
		want := []sample{{time.Second, false}, {10 * time.Millisecond, true}}
		if len(src.got) != 2 || src.got[0] != want[0] || src.got[1] != want[1] {
			t.Errorf("samples %v, want %v", src.got, want)
		}
	})
}

// After Commit the attempt's timeout no longer ends it, but the caller's
// context still does.
func TestAttemptCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{AttemptTimeout: time.Second})
		parent, cancel := context.WithCancelCause(t.Context())
		a := p.StartAttempt(parent)
		done := a.Context().Done()
		a.Commit()
		time.Sleep(time.Hour)
		if a.Context().Err() != nil || a.TimedOut() {
			t.Fatal("a committed attempt ended at its timeout")
		}
		if err := a.End(nil); err != nil {
			t.Fatal(err)
		}
		cancel(errBoom)
		<-done
		if context.Cause(a.Context()) != errBoom {
			t.Errorf("Cause = %v, want the caller's", context.Cause(a.Context()))
		}
	})
}

// StartAfter bounds the attempt by the lead until Restart, then by the
// timeout from Restart on; the latency counts from Restart, and an error
// already marked with MarkAttemptTimeout is not marked twice.
func TestStartAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &samples{timeout: time.Second}
		timer := AttemptTimer{Source: src}

		a := timer.StartAfter(t.Context(), 100*time.Millisecond)
		<-a.Context().Done()
		if !a.TimedOut() {
			t.Error("the lead's end is not the attempt's timeout")
		}
		marked := MarkAttemptTimeout(errBoom)
		if err := a.End(marked); err != marked {
			t.Errorf("End = %v, want the marked error as it is", err)
		}

		b := timer.StartAfter(t.Context(), 100*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		b.Restart()
		time.Sleep(500 * time.Millisecond) // past the lead, within the timeout
		if b.Context().Err() != nil {
			t.Fatal("the lead ended the attempt after Restart")
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if !b.TimedOut() {
			t.Fatal("the timeout did not end the attempt a second after Restart")
		}
		_ = b.End(errBoom)
		want := []sample{{100 * time.Millisecond, false}, {time.Second, false}}
		if len(src.got) != 2 || src.got[0] != want[0] || src.got[1] != want[1] {
			t.Errorf("samples %v, want %v", src.got, want)
		}
	})
}

// Failed ends a call whose caller gave up as cancelled, without a wait;
// a ctx with WithOuterRetry makes the call nested after its first
// failure; and a wait is cut short by the caller's context.
func TestCallFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{MaxAttempts: 5, NestedAttempts: 1, Backoff: backoff.Schedule{Base: time.Hour, Cap: 10 * time.Hour, Jitter: backoff.None}})

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		c := p.Begin(false)
		_ = c.Admit(ctx)
		if err := c.Failed(ctx, errBoom); !errors.Is(err, ErrCancelled) || !errors.Is(err, errBoom) {
			t.Errorf("Failed after the caller gave up = %v, want ErrCancelled with errBoom", err)
		}

		c = p.Begin(false)
		_ = c.Admit(t.Context())
		if err := c.Failed(WithOuterRetry(t.Context()), errBoom); !errors.Is(err, ErrAttemptsExhausted) {
			t.Errorf("Failed under an outer retry = %v, want ErrAttemptsExhausted (NestedAttempts 1)", err)
		}

		ctx, cancel = context.WithTimeout(t.Context(), 3*time.Hour)
		defer cancel()
		c = p.Begin(false)
		_ = c.Admit(ctx)
		start := time.Now()
		if err := c.Failed(ctx, errBoom); err != nil || time.Since(start) != time.Hour {
			t.Errorf("Failed = %v after %v, want nil after the 1h delay", err, time.Since(start))
		}
		_ = c.Admit(ctx)
		// The next delay, 2h, would end at the deadline: not started.
		if err := c.Failed(ctx, errBoom); !errors.Is(err, ErrDeadline) || time.Since(start) != time.Hour {
			t.Errorf("Failed = %v after %v, want ErrDeadline at once", err, time.Since(start))
		}
	})
}

// AttemptTimedOut tells, from the context alone, an attempt its own
// timeout ended from one the caller's cancellation ended, and from one
// still running.
func TestAttemptTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{AttemptTimeout: time.Second})
		a := p.StartAttempt(t.Context())
		if AttemptTimedOut(a.Context()) {
			t.Fatal("a running attempt reports that it timed out")
		}
		<-a.Context().Done()
		if !AttemptTimedOut(a.Context()) {
			t.Fatalf("an attempt its timeout ended: AttemptTimedOut false (cause %v)", context.Cause(a.Context()))
		}
		ctx, cancel := context.WithCancel(t.Context())
		b := p.StartAttempt(ctx)
		cancel()
		<-b.Context().Done()
		if AttemptTimedOut(b.Context()) {
			t.Fatal("an attempt the caller cancelled reports that it timed out")
		}
	})
}

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

// The observer hears GiveUp once for every call that ends without success, with the
// reason and the last error, and never for a success.
func TestObserverGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []string
		p := mustNew(t, Config{Backoff: backoff.Schedule{Immediate: true}, Guards: []admission.Guard{&fakeGuard{allow: 4}},
			Observer: observe.On(observe.GiveUp, func(e observe.Event) {
				events = append(events, e.Reason.Error()+" after "+string(rune('0'+e.Attempt))+": "+errString(e.Err))
			})})
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
// WaitRetryDelay the refused retry's delay; with ReturnAtOnce, it returns
// at once.
func TestBudgetExhaustionWaits(t *testing.T) {
	for _, tc := range []struct {
		mode BudgetExhaustion
		want time.Duration
	}{{WaitSchedule, 75 * time.Millisecond}, {ReturnAtOnce, 0}, {WaitRetryDelay, 50 * time.Millisecond}} {
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
