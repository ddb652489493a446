package throttle_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/throttle"
)

// aws-sdk-go-v2 issue 3550: in the adaptive retry mode (the standard
// mode's retry quota with a client rate limiter in front), a success
// never gave its token back, so once the quota was drained no call was
// retried again for the life of the process. Here the AWS preset's quota
// with the adaptive mode's RateLimiter as a guard: an outage drains the
// quota, calls succeed again, and their successes refill it until a
// failure is retried again.
func TestAWSSDKGoV2Issue3550(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl, err := throttle.NewRateLimiter(throttle.RateLimiterSettings{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := retry.AWS2026()
		cfg.Guards = []admission.Guard{rl}
		p, err := retry.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		errDown := errors.New("down") // transient, not a throttle: the rate limiter lets calls through
		ctx := context.Background()
		attempts := func(fail int) int {
			n := 0
			_ = p.Do(ctx, func(context.Context) error {
				if n++; n <= fail {
					return errDown
				}
				return nil
			})
			return n
		}
		// The outage: calls that always fail drain the quota (500 tokens,
		// 14 a retry) until a failure is no longer retried.
		drained := false
		for range 100 {
			if attempts(1<<30) == 1 {
				drained = true
				break
			}
		}
		if !drained {
			t.Fatal("100 failing calls did not drain the retry quota")
		}
		// The outage ends: every first-attempt success puts a token back,
		// and a failure is retried again once 14 have come back.
		for i := range 200 {
			if attempts(0) != 1 {
				t.Fatal("a healthy call made more than one attempt")
			}
			if i >= 13 && attempts(1) == 2 {
				t.Logf("a failure was retried again after %d successes", i+1)
				return
			}
		}
		t.Error("200 successes after the outage did not refill the quota: failures are still not retried")
	})
}
