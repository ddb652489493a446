package breaker

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/retry"
)

// TestAllowInsideRetryIsNotRetried uses the breaker through Allow inside
// the operation, not as a Guard: once it is open, the operation returns
// ErrOpen itself, and the retry loop must stop after that one attempt
// instead of retrying a call the client refused.
func TestAllowInsideRetryIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{ConsecutiveFailures: 1, OpenJitter: -1, Now: time.Now})
		p, err := retry.New(retry.Config{})
		if err != nil {
			t.Fatal(err)
		}
		attempts, calls := 0, 0
		op := func(context.Context) error {
			attempts++
			done, err := b.Allow()
			if err != nil {
				return err
			}
			calls++
			done(errBoom)
			return errBoom
		}

		// The first attempt fails and trips the breaker; the retry after it
		// is rejected locally and ends the call.
		err = p.Do(context.Background(), op)
		if !errors.Is(err, retry.ErrRejected) || !errors.Is(err, ErrOpen) {
			t.Fatalf("tripping call: err = %v, want ErrRejected and ErrOpen", err)
		}
		if attempts != 2 || calls != 1 {
			t.Fatalf("tripping call: %d attempts, %d reached the dependency; want 2 and 1", attempts, calls)
		}

		attempts, calls = 0, 0
		start := time.Now()
		err = p.Do(context.Background(), op)
		if !errors.Is(err, retry.ErrRejected) || !errors.Is(err, ErrOpen) {
			t.Fatalf("open breaker: err = %v, want ErrRejected and ErrOpen", err)
		}
		var re *retry.Error
		if !errors.As(err, &re) || re.Reason != retry.ErrRejected || re.Attempts != 1 {
			t.Fatalf("open breaker: err = %#v, want a *retry.Error with Reason ErrRejected after 1 attempt", err)
		}
		if attempts != 1 || calls != 0 || time.Since(start) != 0 {
			t.Fatalf("open breaker: %d attempts, %d calls, %v waited; want 1, 0, 0s", attempts, calls, time.Since(start))
		}
	})
}

func TestRejectionsMatchErrRejected(t *testing.T) {
	for _, err := range []error{ErrOpen, ErrTooManyProbes} {
		if !errors.Is(err, retry.ErrRejected) {
			t.Errorf("%q does not match retry.ErrRejected", err)
		}
	}
	if ErrOpen.Error() != "breaker: open" || ErrTooManyProbes.Error() != "breaker: half-open, probes in flight" {
		t.Errorf("messages changed: %q, %q", ErrOpen, ErrTooManyProbes)
	}
	if errors.Is(ErrOpen, ErrTooManyProbes) || errors.Is(ErrTooManyProbes, ErrOpen) {
		t.Error("the two rejections match each other")
	}
}

// TestHugeOpenDuration: math.MaxInt64 passes Validate, and the open period
// it asks for must not wrap around to the past (ending at once) when
// added to the current time or scaled by jitter.
func TestHugeOpenDuration(t *testing.T) {
	tests := []struct {
		name   string
		jitter float64
		draw   uint64
	}{
		{"no jitter", -1, 0},
		{"full jitter, zero draw", 1, 0},
		{"full jitter, half draw", 1, 1 << 63},
		{"full jitter, largest draw", 1, math.MaxUint64},
		{"default jitter, largest draw", 0, math.MaxUint64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{ConsecutiveFailures: 1, OpenDuration: math.MaxInt64, OpenJitter: tc.jitter, Rand: constSource(tc.draw)}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			b := mustNew(t, s)
			// Trip it an hour after the breaker was made, so that the
			// open period starts at a positive offset from its epoch.
			at := t0.Add(time.Hour)
			tk, _ := b.AdmitAt(at)
			b.DoneAt(at, tk, transient)
			for _, later := range []time.Duration{0, time.Nanosecond, time.Hour, 24 * time.Hour, 100 * 365 * 24 * time.Hour} {
				if _, err := b.AdmitAt(at.Add(later)); !errors.Is(err, ErrOpen) {
					t.Fatalf("%v after tripping: err = %v, want ErrOpen", later, err)
				}
			}
			if b.State() != Open {
				t.Fatalf("state %v, want open", b.State())
			}
		})
	}
}
