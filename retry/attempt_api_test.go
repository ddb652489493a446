package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/backoff"
)

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
