package throttle

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/retry"
)

// constSource returns the same draw every time.
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

func TestRejectionsMatchErrRejected(t *testing.T) {
	tests := []struct {
		name string
		err  error
		msg  string
	}{
		{"ErrThrottled", ErrThrottled, "throttle: rejected locally, dependency overloaded"},
		{"ErrRateLimited", ErrRateLimited, "throttle: send rate limit wait would pass the deadline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, retry.ErrRejected) {
				t.Errorf("%q does not match retry.ErrRejected", tc.err)
			}
			if tc.err.Error() != tc.msg {
				t.Errorf("message %q, want %q", tc.err, tc.msg)
			}
		})
	}
	if errors.Is(ErrThrottled, ErrRateLimited) || errors.Is(ErrRateLimited, ErrThrottled) {
		t.Error("the two rejections match each other")
	}
}

// TestRejectionInsideOperationIsNotRetried consults the throttle inside
// the operation rather than as a Guard: its rejection comes back as the
// operation's own error, and the retry loop must not retry it.
func TestRejectionInsideOperationIsNotRetried(t *testing.T) {
	tests := []struct {
		name  string
		admit func(t *testing.T, ctx context.Context) error
		want  error
	}{
		{"Adaptive", func(t *testing.T, _ context.Context) error {
			a := newAdaptive(t, AdaptiveSettings{Rand: constSource(0)})
			for range 1000 {
				a.DoneAt(t0, 0, throttled)
			}
			_, err := a.AdmitAt(t0)
			return err
		}, ErrThrottled},
		{"RateLimiter", func(t *testing.T, ctx context.Context) error {
			r := newRateLimiter(t)
			r.Done(context.Background(), 0, throttled)
			ctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			defer cancel()
			_, err := r.Admit(ctx)
			return err
		}, ErrRateLimited},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := retry.New(retry.Config{})
				if err != nil {
					t.Fatal(err)
				}
				attempts := 0
				err = p.Do(context.Background(), func(ctx context.Context) error {
					attempts++
					return tc.admit(t, ctx)
				})
				if !errors.Is(err, retry.ErrRejected) || !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want ErrRejected and %v", err, tc.want)
				}
				if attempts != 1 {
					t.Fatalf("%d attempts, want 1", attempts)
				}
			})
		})
	}
}
