package core

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// The AWS SDKs' published retry test cases, encoded against the presets.
//
// Behaviour 2.0: the six "Standard Mode" cases of the SDKs' "Retry
// Behavior 2.0" specification, as smithy-swift's RetryIntegrationTests
// reproduce them (Tests/ClientRuntimeTests/Retry/RetryIntegrationTests.swift).
// Behaviour 2.1: the nineteen cases of aws-sdk-go-v2's
// TestRetry2026StandardMode (aws/retry/retry2026_test.go). In both, the
// jitter draw b is 1, which a draw of math.MaxUint64 gives.

// awsOutcome is what a step of a case expects.
type awsOutcome int

const (
	awsRetry awsOutcome = iota
	awsSuccess
	awsMaxAttempts
	awsQuotaExceeded
	awsFail // not retryable
)

// awsStep is one response of a case and what must follow it: the outcome,
// the tokens left, and the delay (of the retry, or of the wait before
// returning for a long-polling operation).
type awsStep struct {
	resp    error // nil for a 200
	outcome awsOutcome
	quota   int64
	delay   time.Duration
}

type awsCase struct {
	name   string
	cfg    func() Config
	tokens int64 // tokens at the start; -1 for a full bucket
	random bool  // the case gives no b: any draw must pass
	steps  []awsStep
}

// amzRetryAfter is a 500 carrying an x-amz-retry-after delay: a transient
// failure with a server-directed delay (not a throttling error).
type amzRetryAfter struct{ d time.Duration }

func (e amzRetryAfter) Error() string             { return "500 with x-amz-retry-after" }
func (e amzRetryAfter) RetryAfter() time.Duration { return e.d }

var (
	err500      = errors.New("500 internal server error")
	err502      = errors.New("502 bad gateway")
	errThrottle = Judge(errors.New("400 Throttling"), Verdict{Class: failure.Throttled})
	err404      = MarkPermanent(errors.New("404 not found"))
)

// drain takes tokens from b until it holds exactly n, using retries of
// cost 5 (throttled) and the transient cost.
func drain(t *testing.T, b *budget.TokenBucket, n int64) {
	t.Helper()
	for b.Tokens() > n {
		c := failure.Transient
		if (b.Tokens()-n)%5 == 0 {
			c = failure.Throttled
		}
		if !b.Withdraw(c) {
			break
		}
	}
	if b.Tokens() != n {
		t.Fatalf("cannot drain the bucket to %d tokens (stuck at %d)", n, b.Tokens())
	}
}

func runAWSCases(t *testing.T, cases []awsCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg()
			b := cfg.Budget.(*budget.TokenBucket)
			if tc.tokens >= 0 {
				drain(t, b, tc.tokens)
			}
			p := mustNew(t, cfg)
			draw := uint64(math.MaxUint64)
			if tc.random {
				draw = 0x9e3779b97f4a7c15
			}
			c := p.Begin(false)
			for i, s := range tc.steps {
				if err := c.Admit(context.Background()); err != nil {
					t.Fatalf("step %d: Admit: %v", i+1, err)
				}
				d := c.Done(t0, time.Time{}, s.resp, draw)
				var want error
				switch s.outcome {
				case awsMaxAttempts:
					want = ErrAttemptsExhausted
				case awsQuotaExceeded:
					want = ErrBudgetExhausted
				case awsFail:
					want = ErrPermanent
				}
				if d.Reason != want {
					t.Fatalf("step %d: reason %v, want %v", i+1, d.Reason, want)
				}
				switch {
				case s.outcome == awsRetry && d.Delay != s.delay:
					t.Errorf("step %d: delay %v, want %v", i+1, d.Delay, s.delay)
				case s.outcome != awsRetry && s.delay > 0 && (!d.Wait || d.Delay != s.delay):
					t.Errorf("step %d: wait before returning %v (wait %v), want %v", i+1, d.Delay, d.Wait, s.delay)
				case s.outcome != awsRetry && s.delay == 0 && d.Wait:
					t.Errorf("step %d: waits %v before returning, want no wait", i+1, d.Delay)
				}
				if got := b.Tokens(); got != s.quota {
					t.Errorf("step %d: %d tokens, want %d", i+1, got, s.quota)
				}
				if s.outcome != awsRetry {
					c = p.Begin(false) // the call ended: the next step is a new call
				}
			}
		})
	}
}

func TestAWSStandardPublishedCases(t *testing.T) {
	std := AWSStandard
	maxAttempts := func(n int) func() Config {
		return func() Config { c := AWSStandard(); c.MaxAttempts = n; return c }
	}
	cases := []awsCase{
		{"case 1: retry eventually succeeds", std, -1, false, []awsStep{
			{err500, awsRetry, 495, time.Second},
			{err500, awsRetry, 490, 2 * time.Second},
			{nil, awsSuccess, 495, 0},
		}},
		{"case 2: fail due to max attempts reached", std, -1, false, []awsStep{
			{err502, awsRetry, 495, time.Second},
			{err502, awsRetry, 490, 2 * time.Second},
			{err502, awsMaxAttempts, 490, 0},
		}},
		{"case 3: retry quota reached after a single retry", std, 5, false, []awsStep{
			{err500, awsRetry, 0, time.Second},
			{err502, awsQuotaExceeded, 0, 0},
		}},
		{"case 4: no retries at all if retry quota is 0", std, 0, false, []awsStep{
			{err500, awsQuotaExceeded, 0, 0},
		}},
		{"case 5: verifying exponential backoff timing", maxAttempts(5), -1, false, []awsStep{
			{err500, awsRetry, 495, time.Second},
			{err500, awsRetry, 490, 2 * time.Second},
			{err500, awsRetry, 485, 4 * time.Second},
			{err500, awsRetry, 480, 8 * time.Second},
			{err500, awsMaxAttempts, 480, 0},
		}},
		{"case 6: verify max backoff time", func() Config {
			c := AWSStandard()
			c.MaxAttempts, c.Backoff.Cap = 5, 3*time.Second
			return c
		}, -1, false, []awsStep{
			{err500, awsRetry, 495, time.Second},
			{err500, awsRetry, 490, 2 * time.Second},
			{err500, awsRetry, 485, 3 * time.Second},
			{err500, awsRetry, 480, 3 * time.Second},
			{err500, awsMaxAttempts, 480, 0},
		}},
	}
	runAWSCases(t, cases)
}

func TestAWS2026PublishedCases(t *testing.T) {
	v21 := AWS2026
	with := func(f func(*Config)) func() Config {
		return func() Config { c := AWS2026(); f(&c); return c }
	}
	five := with(func(c *Config) { c.MaxAttempts = 5 })
	dynamo := with(func(c *Config) { c.Backoff.Base, c.MaxAttempts = 25*time.Millisecond, 4 })
	longPoll := with(func(c *Config) { c.OnBudgetExhausted = WaitRetryDelay })
	longPoll2 := with(func(c *Config) { c.OnBudgetExhausted, c.MaxAttempts = WaitRetryDelay, 2 })
	ms := time.Millisecond
	cases := []awsCase{
		{"retry eventually succeeds", v21, -1, false, []awsStep{
			{err500, awsRetry, 486, 50 * ms},
			{err500, awsRetry, 472, 100 * ms},
			{nil, awsSuccess, 486, 0},
		}},
		{"fail due to max attempts reached", v21, -1, false, []awsStep{
			{err502, awsRetry, 486, 50 * ms},
			{err502, awsRetry, 472, 100 * ms},
			{err502, awsMaxAttempts, 472, 0},
		}},
		{"retry quota reached after a single retry", v21, 14, false, []awsStep{
			{err500, awsRetry, 0, 50 * ms},
			{err500, awsQuotaExceeded, 0, 0},
		}},
		{"no retries at all if retry quota is 0", v21, 0, false, []awsStep{
			{err500, awsQuotaExceeded, 0, 0},
		}},
		{"verifying exponential backoff timing", five, -1, false, []awsStep{
			{err500, awsRetry, 486, 50 * ms},
			{err500, awsRetry, 472, 100 * ms},
			{err500, awsRetry, 458, 200 * ms},
			{err500, awsRetry, 444, 400 * ms},
			{err500, awsMaxAttempts, 444, 0},
		}},
		// backoff.Schedule refuses a throttled base above the cap, which
		// the SDK clamps: the case lowers both.
		{"verify max backoff time", with(func(c *Config) { c.MaxAttempts, c.Backoff.Cap, c.Backoff.ThrottledBase = 5, 200*ms, 200*ms }), -1, false, []awsStep{
			{err500, awsRetry, 486, 50 * ms},
			{err500, awsRetry, 472, 100 * ms},
			{err500, awsRetry, 458, 200 * ms},
			{err500, awsRetry, 444, 200 * ms},
			{err500, awsMaxAttempts, 444, 0},
		}},
		{"retry stops after retry quota exhaustion", five, 20, false, []awsStep{
			{err500, awsRetry, 6, 50 * ms},
			{err502, awsQuotaExceeded, 6, 0},
		}},
		{"retry quota recovery after successful responses", five, 30, false, []awsStep{
			{err500, awsRetry, 16, 50 * ms},
			{err502, awsRetry, 2, 100 * ms},
			{nil, awsSuccess, 16, 0},
			{err500, awsRetry, 2, 50 * ms},
			{nil, awsSuccess, 16, 0},
		}},
		{"throttling error token bucket drain and backoff duration", v21, -1, false, []awsStep{
			{errThrottle, awsRetry, 495, time.Second},
			{nil, awsSuccess, 500, 0},
		}},
		{"dynamodb base backoff and increased retries", dynamo, -1, false, []awsStep{
			{err500, awsRetry, 486, 25 * ms},
			{err500, awsRetry, 472, 50 * ms},
			{err500, awsRetry, 458, 100 * ms},
			{err500, awsMaxAttempts, 458, 0},
		}},
		{"long-polling backoff when token bucket empty", longPoll, 0, false, []awsStep{
			{err500, awsQuotaExceeded, 0, 50 * ms},
		}},
		// Retry Behavior 2.1 and the Java v2 and Rust SDKs' test data wait
		// from the throttling base (1 s); aws-sdk-go-v2's copy of the case
		// waits 50 ms.
		{"long-polling backoff after throttling error when token bucket empty", longPoll, 0, false, []awsStep{
			{errThrottle, awsQuotaExceeded, 0, 1000 * ms},
		}},
		{"long-polling max attempts exceeded must not delay", longPoll2, -1, false, []awsStep{
			{err500, awsRetry, 486, 50 * ms},
			{err500, awsMaxAttempts, 486, 0},
		}},
		{"long-polling success must not delay", longPoll2, -1, false, []awsStep{
			{err500, awsRetry, 486, 50 * ms},
			{nil, awsSuccess, 500, 0},
		}},
		{"long-polling non-retriable errors must not delay", longPoll2, -1, false, []awsStep{
			{err404, awsFail, 500, 0},
		}},
		{"honor x-amz-retry-after header", v21, -1, true, []awsStep{
			{amzRetryAfter{1500 * ms}, awsRetry, 486, 1500 * ms},
			{nil, awsSuccess, 500, 0},
		}},
		{"x-amz-retry-after minimum is exponential backoff duration", v21, -1, false, []awsStep{
			{amzRetryAfter{0}, awsRetry, 486, 50 * ms},
			{nil, awsSuccess, 500, 0},
		}},
		{"x-amz-retry-after maximum is 5+exponential backoff duration", v21, -1, false, []awsStep{
			{amzRetryAfter{10 * time.Second}, awsRetry, 486, 5050 * ms},
			{nil, awsSuccess, 500, 0},
		}},
		// An invalid header carries no delay: the error is a plain 500.
		{"invalid x-amz-retry-after falls back to exponential backoff", v21, -1, false, []awsStep{
			{err500, awsRetry, 486, 50 * ms},
			{nil, awsSuccess, 500, 0},
		}},
	}
	runAWSCases(t, cases)
}
