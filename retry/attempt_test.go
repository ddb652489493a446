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
