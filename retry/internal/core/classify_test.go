package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/failure"
)

func TestServerDelay(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		asked  time.Duration
		lo, hi time.Duration
	}{
		{"honoured with jitter on top", Config{}, 5 * time.Second, 5 * time.Second, 5500 * time.Millisecond},
		{"up to MaxServerDelay", Config{MaxServerDelay: 2 * time.Second}, 2 * time.Second, 2 * time.Second, 2200 * time.Millisecond},
		// The schedule's throttled delay for a first retry is at most 1 s:
		// a longer server delay wins.
		{"beats a shorter schedule", Config{}, 2 * time.Second, 2 * time.Second, 2200 * time.Millisecond},
		// A server delay is a floor: a longer schedule wins.
		{"a longer schedule wins", Config{Backoff: backoff.Schedule{ThrottledBase: 10 * time.Second, Jitter: backoff.None}}, time.Second, 10 * time.Second, 10 * time.Second},
		{"zero jitter setting uses default", Config{ServerJitter: 0}, 2 * time.Second, 2 * time.Second, 2200 * time.Millisecond},
		{"full jitter setting", Config{ServerJitter: 1}, 2 * time.Second, 2 * time.Second, 4 * time.Second},
		{"negative jitter setting means none", Config{ServerJitter: -1}, 2 * time.Second, 2 * time.Second, 2 * time.Second},
		// Told 0, the wait is the schedule's: full jitter over [0, 1 s].
		{"zero waits the schedule", Config{}, 0, 0, time.Second},
		{"clamped to MaxServerDelay", Config{MaxServerDelay: 3 * time.Second, ClampServerDelay: true, ServerJitter: -1}, time.Hour, 3 * time.Second, 3 * time.Second},
		// MaxServerExtra bounds the wait to the schedule's delay (at most
		// 1 s here) plus 2 s.
		{"MaxServerExtra", Config{MaxServerExtra: 2 * time.Second, ServerJitter: -1}, 10 * time.Second, 2 * time.Second, 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for seed := range uint64(50) {
					cfg := tc.cfg
					cfg.Rand = rand.NewPCG(seed, 1)
					p := mustNew(t, cfg)
					start := time.Now()
					calls := 0
					err := p.Do(t.Context(), failing(1, Judge(errBoom, Verdict{Class: failure.Throttled, Delay: tc.asked, HasDelay: true}), &calls))
					if err != nil {
						t.Fatal(err)
					}
					if el := time.Since(start); el < tc.lo || el > tc.hi {
						t.Fatalf("waited %v, want [%v, %v]", el, tc.lo, tc.hi)
					}
				}
			})
		})
	}
}

func TestServerDelayPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		calls := 0
		err := p.Do(ctx, failing(1, Judge(errBoom, Verdict{Class: failure.Throttled, Delay: 5 * time.Second, HasDelay: true}), &calls))
		if !errors.Is(err, ErrDeadline) || calls != 1 {
			t.Fatalf("calls = %d, err = %v", calls, err)
		}
	})
}

func TestThrottledUsesThrottledBase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{Backoff: backoff.Schedule{Jitter: backoff.None}})
		start := time.Now()
		calls := 0
		if err := p.Do(t.Context(), failing(2, Judge(errBoom, Verdict{Class: failure.Throttled}), &calls)); err != nil {
			t.Fatal(err)
		}
		// 1s then 2s: the throttled base doubling.
		if el := time.Since(start); el != 3*time.Second {
			t.Fatalf("elapsed %v, want 3s", el)
		}
	})
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Reason: ErrAttemptsExhausted, Attempts: 3, Last: errBoom}
	if got, want := e.Error(), "retry: attempts exhausted after 3 attempts: boom"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	e = &Error{Reason: ErrCancelled, Attempts: 1, Last: errBoom, Cause: context.Canceled}
	if got, want := e.Error(), "retry: cancelled after 1 attempt (context canceled): boom"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want failure.Class
	}{
		{"plain", errBoom, failure.Transient},
		{"permanent", fmt.Errorf("x: %w", MarkPermanent(errBoom)), failure.Permanent},
		{"throttled", Judge(errBoom, Verdict{Class: failure.Throttled}), failure.Throttled},
		{"server delay", Judge(errBoom, Verdict{Class: failure.Throttled, Delay: time.Second, HasDelay: true}), failure.Throttled},
		{"deadline exceeded", context.DeadlineExceeded, failure.Timeout},
		{"attempt timeout", &timeoutError{errBoom}, failure.Timeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultClassify(tc.err); got != tc.want {
				t.Fatalf("DefaultClassify = %v, want %v", got, tc.want)
			}
		})
	}
}

// A server that asks for longer than MaxServerDelay is not called back
// early: the loop stops at once.
func TestServerDelayTooLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{MaxServerDelay: 2 * time.Second})
		start := time.Now()
		calls := 0
		err := p.Do(t.Context(), failing(1, Judge(errBoom, Verdict{Class: failure.Throttled, Delay: time.Hour, HasDelay: true}), &calls))
		if calls != 1 || !errors.Is(err, ErrServerDelayTooLong) || !errors.Is(err, errBoom) || time.Since(start) != 0 {
			t.Fatalf("calls = %d, waited %v, err = %v", calls, time.Since(start), err)
		}
	})
}

// FuzzServerDelay checks that any requested delay, settings and draw
// give a wait that is never negative, never below the schedule's own
// delay, and never below the server's request (as clamped) unless
// MaxServerExtra bounds it.
func FuzzServerDelay(f *testing.F) {
	f.Add(int64(time.Second), int64(0), 0.1, int64(0), false, uint64(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), 1.0, int64(math.MaxInt64), true, uint64(math.MaxUint64))
	f.Add(int64(-5), int64(time.Minute), 0.5, int64(time.Second), false, uint64(1<<63))
	f.Add(int64(time.Hour), int64(time.Minute), -1.0, int64(0), true, uint64(12345))
	f.Fuzz(func(t *testing.T, asked, maxDelay int64, jitter float64, extra int64, clamp bool, u uint64) {
		p, err := New(Config{MaxServerDelay: time.Duration(maxDelay), ServerJitter: jitter,
			MaxServerExtra: time.Duration(extra), ClampServerDelay: clamp})
		if err != nil {
			return
		}
		sd := inspect(Judge(errBoom, Verdict{Class: failure.Throttled, Delay: time.Duration(asked), HasDelay: true})).serverDelay
		d, tooLong := p.delay(1, 0, failure.Throttled, sd, u)
		want := min(time.Duration(max(asked, 0)), p.maxServerDelay)
		if tooLong != (!clamp && time.Duration(asked) > p.maxServerDelay) {
			t.Fatalf("asked %v, max %v, clamp %v: tooLong %v", time.Duration(asked), p.maxServerDelay, clamp, tooLong)
		}
		if tooLong {
			return
		}
		sched := p.backoff.ThrottledDelay(0, 0, u)
		if d < 0 || d < sched {
			t.Fatalf("asked %v: wait %v, below the schedule's %v", time.Duration(asked), d, sched)
		}
		if extra == 0 && d < want {
			t.Fatalf("asked %v: wait %v, below the server's %v", time.Duration(asked), d, want)
		}
		if extra > 0 && d > max(sched, addSat(sched, time.Duration(extra))) {
			t.Fatalf("asked %v: wait %v, beyond the schedule's %v plus %v", time.Duration(asked), d, sched, time.Duration(extra))
		}
	})
}

func TestErrorWithoutReason(t *testing.T) {
	if got := (&Error{}).Error(); got != "retry: stopped after 0 attempts" {
		t.Fatalf("got %q", got)
	}
}

// An operation that returns the package's own stop sentinels, or an inner
// Policy's error that stopped on one, is not retried.
func TestOperationReturnsStopSentinel(t *testing.T) {
	inner := mustNew(t, Config{Backoff: backoff.Schedule{Immediate: true}})
	innerPermanent := inner.Do(context.Background(), func(context.Context) error { return MarkPermanent(errBoom) })
	innerFinal := inner.Do(context.Background(), func(context.Context) error { return Judge(errBoom, Verdict{Final: true}) })
	tests := []struct {
		name string
		err  error
		cfg  Config
		want error
		runs int
	}{
		{"ErrPermanent", ErrPermanent, Config{}, ErrPermanent, 1},
		{"wrapped ErrPermanent", fmt.Errorf("lookup: %w", ErrPermanent), Config{}, ErrPermanent, 1},
		{"ErrFinal", ErrFinal, Config{}, ErrFinal, 1},
		{"wrapped ErrFinal", fmt.Errorf("post: %w", ErrFinal), Config{}, ErrFinal, 1},
		{"inner policy stopped as permanent", innerPermanent, Config{}, ErrPermanent, 1},
		{"inner policy stopped as final", innerFinal, Config{}, ErrFinal, 1},
		{"operation's own cancellation", fmt.Errorf("query: %w", context.Canceled), Config{}, ErrPermanent, 1},
		{"cancellation a classifier retries", context.Canceled,
			Config{Classify: func(error) failure.Class { return failure.Transient }}, ErrAttemptsExhausted, 3},
		{"inner policy ran out of attempts", inner.Do(context.Background(), func(context.Context) error { return errBoom }),
			Config{}, ErrAttemptsExhausted, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.cfg.Backoff = backoff.Schedule{Immediate: true}
				p := mustNew(t, tc.cfg)
				calls := 0
				err := p.Do(t.Context(), failing(9, tc.err, &calls))
				var re *Error
				if calls != tc.runs || !errors.As(err, &re) || re.Reason != tc.want {
					t.Fatalf("calls = %d, err = %v; want %d calls and reason %v", calls, err, tc.runs, tc.want)
				}
			})
		})
	}
}
