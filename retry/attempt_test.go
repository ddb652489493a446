package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
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
				var classes []Class
				p := mustNew(t, Config{AttemptTimeout: time.Second, MaxAttempts: 2, Backoff: backoff.Schedule{Immediate: true},
					OnRetry: func(e RetryEvent) { classes = append(classes, e.Class) }})
				err := p.Do(t.Context(), func(ctx context.Context) error {
					time.Sleep(tc.takes)
					return errBoom
				})
				if !errors.Is(err, errBoom) || errors.Is(err, ErrAttemptTimeout) != tc.timeout {
					t.Fatalf("err = %v, want errBoom, wrapped with ErrAttemptTimeout: %v", err, tc.timeout)
				}
				want := Transient
				if tc.timeout {
					want = Timeout
				}
				if diff := cmp.Diff([]Class{want}, classes); diff != "" {
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
		if !errors.Is(err, ErrAttemptTimeout) || DefaultClassify(err) != Timeout {
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
