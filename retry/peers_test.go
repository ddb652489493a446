package retry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
)

// cenkalti/backoff issue 184: an operation that returned RetryAfter(d)
// lost its error: once the tries ran out the caller got the RetryAfter
// error, not the failure behind it. Here a server delay wraps the
// error, and the call's error keeps it, whether the attempts run out, the
// delay is too long to wait, or the delay is clamped.
func TestCenkaltiBackoffIssue184(t *testing.T) {
	cause := errors.New("quota exceeded for project p")
	cases := []struct {
		name   string
		cfg    retry.Config
		delay  time.Duration
		reason error
	}{
		{"attempts run out", retry.Config{MaxAttempts: 2}, time.Millisecond, retry.ErrAttemptsExhausted},
		{"the delay is too long", retry.Config{MaxAttempts: 2, MaxServerDelay: time.Second}, time.Hour, retry.ErrServerDelayTooLong},
		{"the delay is clamped", retry.Config{MaxAttempts: 2, MaxServerDelay: time.Millisecond, ClampServerDelay: true}, time.Hour, retry.ErrAttemptsExhausted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Budget = budget.Unlimited
			c.cfg.Backoff = backoff.Schedule{Immediate: true}
			p, err := retry.New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Do(context.Background(), func(context.Context) error {
				return retry.Judge(cause, retry.Verdict{Class: failure.Throttled, Delay: c.delay, HasDelay: true})
			})
			var re *retry.Error
			if !errors.Is(err, cause) || !errors.Is(err, c.reason) || !errors.As(err, &re) || !errors.Is(re.Last, cause) {
				t.Errorf("error %v: want %v, wrapping the operation's error", err, c.reason)
			}
			if !strings.Contains(err.Error(), cause.Error()) {
				t.Errorf("error text %q does not name the operation's error", err)
			}
		})
	}
}
