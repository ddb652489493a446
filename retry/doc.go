// Package retry runs an operation again when it fails transiently, safely.
//
// Build a [Policy] once per dependency from a [Config] (the zero Config is
// the safe default) and call [Policy.Do] or [DoValue] around each call:
//
//	p := retry.Default() // 3 attempts, full jitter, base 50 ms, cap 20 s
//	err := p.Do(ctx, func(ctx context.Context) error {
//		return client.Call(ctx, req)
//	})
//
// # What the loop does
//
// Each failed attempt goes through one decision, [Policy.Decide], in a
// fixed order:
//
//  1. If the caller's context is done, stop with [ErrCancelled]: the
//     caller's cancellation or deadline is never retried.
//  2. Classify the error ([DefaultClassify] or Config.Classify): Permanent
//     stops with [ErrPermanent]; an error marked with [MarkFinal] stops
//     with [ErrFinal] but keeps its class for budgets and guards; Throttled
//     uses the schedule's throttled base; Timeout and Transient use the
//     normal schedule.
//  3. If MaxAttempts (counting the first) are used up, stop with
//     [ErrAttemptsExhausted].
//  4. The wait is the server-directed delay if the error carries one
//     ([ServerDelay]: Retry-After, gRPC pushback), bounded by
//     MaxServerDelay and with a little jitter added on top; otherwise the
//     schedule's delay.
//  5. If the wait would end after the caller's deadline, do not start it:
//     stop now with [ErrDeadline]. No call ever sleeps past its deadline.
//  6. Withdraw a retry from the budget; an empty budget stops with
//     [ErrBudgetExhausted].
//
// # Retry budget
//
// Backoff spreads retries out; a budget bounds how many there are. Config.
// Budget nil means a token bucket of its own (budget.TokenBucket with the
// AWS SDK standard-mode quota: 500 tokens, 5 per retry, 10 after a
// timeout, 1 back per first-attempt success), so a Policy, built once per
// dependency, stops retrying soon after that dependency starts failing
// everything: against 100 calls per second that all fail, 3 attempts make
// 300 attempts per second without a budget and about 100 with it
// (TestStorm). Pass budget.Unlimited to opt out, or a budget.Ratio or
// budget.GRPC for the other policies described in package budget.
//
// Every stop returns an [*Error] that wraps the reason and the last
// attempt's error: errors.Is(err, retry.ErrAttemptsExhausted) and
// errors.Is(err, io.ErrUnexpectedEOF) both work on the same value.
//
// Decide needs no clock and no sleep, so the simulator in package sim
// drives exactly this logic under virtual time.
//
// # Timeouts
//
// Config.AttemptTimeout bounds each attempt with a child context; its
// expiry is a retryable Timeout. The caller's context bounds the whole
// call. Config.Timeouts plugs in an adaptive per-attempt timeout.
//
// # Retry at one layer
//
// Three services that each retry three times turn one failure at the
// bottom into 27 attempts. Server middleware marks inbound request
// contexts with [WithOuterRetry]; a Policy then makes NestedAttempts
// attempts (one by default) for calls made with that context, so only the
// edge retries.
//
// # Cost
//
// A call whose first attempt succeeds allocates nothing, starts no
// goroutine, arms no timer and reads no clock (BenchmarkDoSuccess). A retry
// with a zero delay arms no timer (BenchmarkDoRetry2).
//
// The algorithm follows Marc Brooker, "Timeouts, retries, and backoff with
// jitter", Amazon Builders' Library,
// https://aws.amazon.com/builders-library/timeouts-retries-and-backoff-with-jitter/
// and "Exponential Backoff And Jitter", AWS Architecture Blog, 2015,
// https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/;
// and Google's Site Reliability Engineering book, chapters 21 "Handling
// Overload", https://sre.google/sre-book/handling-overload/, and 22
// "Addressing Cascading Failures",
// https://sre.google/sre-book/addressing-cascading-failures/.
package retry
