package retry

import "github.com/unherd/unherd/retry/internal/core"

// AWSStandard returns the AWS SDKs' standard retry mode as "retry
// behaviour 2.0" defines it (AWS SDKs and Tools Reference Guide, "Retry
// behavior",
// https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html):
// 3 attempts; delay i (0 for the first retry) drawn as b·2^i s with b
// uniform in [0, 1], at most 20 s, after any error; and a retry quota of
// its own, [budget.AWSStandardQuota] (500 tokens, 5 per retry, 10 after a
// timeout, the retry's cost back on its success, 1 back per first-attempt
// success).
//
// The delay is capped after the draw (backoff.Schedule.CapAfterDraw), as
// the SDKs compute it, so that once 2^i s passes 20 s a share of the
// delays sit exactly at 20 s.
// Server-directed delays are honoured as unherd honours them (a floor over
// the schedule, up to MaxServerDelay); behaviour 2.0 has none.
//
// Each call returns a Config with a new bucket: build one Policy from it
// per dependency.
func AWSStandard() Config { return Config(core.AWSStandard()) }

// AWS2026 returns the AWS SDKs' "Retry Behavior 2.1", the default of
// aws-sdk-go-v2 since v1.48.0 (November 2026; before that, opted into with
// AWS_NEW_RETRIES_2026=true), which the zero Config follows: 3 attempts;
// full jitter from a 50 ms base, 1 s after a throttling error, each delay
// capped at 20 s before the draw; a retry quota of its own,
// [budget.AWS2026Quota] (500 tokens, 14 per retry, 5 per throttling retry,
// the retry's cost back on its success, 1 back per first-attempt success);
// and a server's delay (the SDKs read x-amz-retry-after, in milliseconds)
// clamped to [computed backoff, computed backoff + 5 s], with no jitter of
// its own.
//
// For a long-polling operation (SQS ReceiveMessage and the like, which
// callers run in a loop), the SDKs wait the computed backoff before
// returning the quota error; for the others they return it at once, and
// so does this preset (OnBudgetExhausted: ReturnAtOnce), unlike the zero
// Config, which waits (see the package doc, "A refused retry still
// waits"); set OnBudgetExhausted to WaitRetryDelay for long polling. For DynamoDB they use a
// 25 ms base and 4 attempts: set Backoff.Base and MaxAttempts.
//
// Each call returns a Config with a new bucket: build one Policy from it
// per dependency.
func AWS2026() Config { return Config(core.AWS2026()) }
