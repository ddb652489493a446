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
// For a protocol of one's own, where a function per attempt does not fit,
// range over the call's attempts: each is the attempt's context, and the
// error the body leaves in err says how the attempt ended. However the
// loop ends (a success, a failure, a break, a return, a panic), the
// budget and the guards hear it once ([Policy.Attempts]):
//
//	var err error
//	for ctx := range p.Attempts(ctx, &err) {
//		reply, err = ask(ctx, addr, line)
//	}
//
// # What the loop does
//
// Do is a thin loop around one per-call state machine, which the
// simulator in package sim, the HTTP transport in package unherdhttp and
// the gRPC interceptors in package unherdgrpc drive too, so that all of
// them retry by exactly the same rules. An integration that drives it
// step by step imports package retry/engine; a user never needs to. Per
// call, the machine owns the attempt count, the previous delay, the class
// the last retry was charged as, the guards' tickets, and every report to
// the budget and the guards. Before each attempt it asks the guards; after
// it, it decides, in the order below, whether and how long to wait.
//
// A failure is told to the call as values: [Judge] hands it the error
// with a [Verdict] (its class, whether the call must end after it, the
// delay the server asked for), which the classification reads as it is;
// [MarkPermanent] is the common verdict's shorthand.
//
// Each failed attempt goes through these steps, in this order:
//
//  1. A local rejection inside the error (errors.Is(err, ErrRejected))
//     stops with ErrRejected.
//  2. Classify the error (Config.Classify, or the default rules its
//     doc lists), exactly once, and tell the guards and the budget.
//  3. Permanent stops with [ErrPermanent]; an error judged Final stops
//     with [ErrFinal] but keeps its class for budgets and guards.
//  4. If MaxAttempts (counting the first) are used up, stop with
//     [ErrAttemptsExhausted].
//  5. The wait is the schedule's jittered delay (from the throttled base
//     for a Throttled failure) or, if longer, the server-directed delay
//     the error carries (a RetryAfter method: Retry-After, gRPC
//     pushback) with a little jitter on top, bounded by MaxServerDelay. A server delay is
//     a floor, never a replacement for the schedule's jitter: clients told
//     "retry after 0" still spread out.
//  6. If the wait would end at or after the caller's deadline, do not
//     start it: stop now with [ErrDeadline]. No call ever sleeps past its
//     deadline.
//  7. Withdraw a retry from the budget; an empty budget stops with
//     [ErrBudgetExhausted].
//
// Before each attempt the call asks the guards; a rejection stops with
// [ErrRejected] and gives back to the budget the retry withdrawn for the
// rejected attempt, so a local rejection costs the budget nothing.
//
// The failure classes ([failure.Transient], [failure.Timeout],
// [failure.Throttled], [failure.Permanent]) have one name, in package
// failure, below both this package and package budget, which charges
// retries by them.
//
// # Retry budget
//
// Backoff spreads retries out; a budget bounds how many there are. Config.
// Budget nil means a token bucket of its own (budget.TokenBucket with the
// AWS SDKs' "Retry Behavior 2.1" quota, budget.AWS2026Quota: 500 tokens,
// 14 per retry, 5 per retry after a throttling error, the retry's cost back on its success, 1
// back per first-attempt success), so a Policy, built once per
// dependency, stops retrying soon after that dependency starts failing
// everything: against 100 calls per second that all fail, 3 attempts make
// 300 attempts per second without a budget and 100 with it once 35
// retries have drained the bucket (TestStorm). Pass budget.Unlimited to
// opt out, or a budget.Ratio or budget.GRPC for the other policies
// described in package budget.
//
// # AWS presets, and the zero Config
//
// [AWSStandard] and [AWS2026] are the AWS SDKs' standard retry mode in its
// two generations, "retry behaviour 2.0" and "Retry Behavior 2.1", tested
// against the SDKs' published cases. The zero Config follows 2.1 in its
// schedule (full jitter, 50 ms base, 1 s after throttling, 20 s cap) and
// its quota, for three reasons: it is what the SDKs themselves now
// default to; 14 tokens a retry stop retries against a failing dependency
// after 35 retries instead of 100, which lowers the load a storm or an
// outage brings (package sim's storm and outage scenarios measure it: run
// "unherd whatif" with either quota); and a throttling error, which the server
// answers quickly and the schedule waits out from a 1 s base, stays cheap
// to retry. It keeps unherd's own rule for server-directed delays (a
// floor with 10% jitter, and no retry at all when the server asks for
// more than MaxServerDelay) rather than 2.1's clamp, which comes back at
// most 5 s after the computed backoff even when the server asked for a
// minute.
//
// # A refused retry still waits
//
// A budget bounds the load of an open stream, where each call is new
// work. A caller that loops (a worker, a poller, a queue consumer whose
// failed message comes straight back: a closed population) is different:
// if a call whose retry was refused returned at once, the caller would be
// back at once, and the empty budget would turn into more load, not less,
// because a failure (a 503 from an overloaded server) usually comes back
// faster than a success. Waiting only the refused retry's own delay is
// not enough either: early in a growing schedule that delay is short, so
// a caller that waits it is back with a new first attempt far sooner
// than its later retries would have come. Waiting out the whole rest of
// the schedule goes too far the other way: the load falls well below
// what the dependency saw without a budget, and callers that no longer
// probe find it back seconds late. So by default
// (Config.OnBudgetExhausted, WaitSchedule) a call whose retry the budget
// refuses first waits at the pace of the retries it had left: one draw,
// with the schedule's jitter, from the mean of their capped delays (from
// the throttled base after a throttling error; at least a server's
// delay), then returns ErrBudgetExhausted. A caller that loops so makes
// one attempt in the time its call would have spent per retry, and
// callers refused together spread over the whole range instead of coming
// back together.
// The wait never reaches the caller's deadline (when the draw would, it
// is drawn again within the time left; a refused retry whose own delay
// does not fit is not waited: ErrDeadline, at once) and ends with its
// context. WaitRetryDelay, the default before, waits the refused retry's
// own delay (from the throttled base after a throttling error), as the
// AWS SDKs' Retry Behavior 2.1 waits for long-polling operations. Callers that do not loop and prefer
// the error at once, on a request path, set ReturnAtOnce; the AWS presets
// do, as the SDKs do outside long polling.
//
// bench/NOTES.md ("Refused retries") gives the load each mode offers a
// failing dependency, measured, and RELIABILITY.md the loopback table.
//
// Every stop returns an [*Error] that wraps the reason and the last
// attempt's error: errors.Is(err, retry.ErrAttemptsExhausted) and
// errors.Is(err, io.ErrUnexpectedEOF) both work on the same value.
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
// goroutine, arms no timer and reads no clock (BenchmarkDoSuccess). Under
// an attempt timeout it allocates the attempt's context and reads the
// clock once; the context arms its timer and links to the caller's
// context only if the attempt reads its Done channel
// (BenchmarkDoAttemptTimeout and BenchmarkDoAttemptTimeoutWatched). A retry
// with a zero delay arms no timer (BenchmarkDoRetry2). A call that waits
// between attempts waits on one timer, reused for all its waits and taken
// from (and given back to) a pool shared by all calls, so the waits
// allocate nothing once the pool is warm and read the clock once per call
// (BenchmarkDoRetry2Wait); inside a testing/synctest bubble each wait has
// a timer of its own, on the bubble's clock.
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
