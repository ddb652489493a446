// Package timeout sets per-attempt timeouts from the latency a dependency
// actually shows.
//
// A fixed attempt timeout is either too long (a hung attempt holds the
// caller for it before the retry loop can try again) or too short (it
// cuts off ordinary slow answers, and every false timeout is a retry: more
// load, not less). The Amazon Builders' Library ("Timeouts, retries, and
// backoff with jitter", Marc Brooker,
// https://aws.amazon.com/builders-library/timeouts-retries-and-backoff-with-jitter/)
// gives the method: choose the acceptable rate of false timeouts, say
// 0.1%, then set the timeout at the matching percentile of the
// dependency's latency, p99.9. [Adaptive] does that continuously: it
// records the latency of every successful attempt in a windowed quantile
// estimator (the last 8,192 to 16,384 by default) and returns
//
//	min(Ceiling, max(Floor, Margin * quantile(1 - FalseTimeoutRate)))
//
// # Defaults
//
// FalseTimeoutRate 0.001 (p99.9), as in the Builders' Library example.
// Margin 1.5, Floor 10 ms, Ceiling 10 s: these three are this package's
// engineering choices, not the source's. The margin covers the estimate's
// sampling error (p99.9 of 8,192 latencies rests on the 8 largest) and lets
// the timeout follow latency upward; the floor keeps the caller's own
// pauses from timing out fast calls; the ceiling bounds what a hung
// dependency can cost. Until the estimator holds 4/FalseTimeoutRate
// latencies (4,000) the timeout is Config.Initial, which defaults to the
// ceiling: a new client does not guess.
//
// # Only successes count
//
// A fast failure (a refused connection) says nothing about how long an
// answer takes, and a timed-out attempt says only that the answer would
// have taken longer than the timeout; counting timed-out attempts would
// push the timeout to the ceiling whenever the dependency hangs, which is
// exactly when a short timeout matters. The timeout still grows when the
// dependency becomes slower: the answers that arrive just under the
// timeout lift the estimate, and the margin lifts the timeout above it, by
// up to Margin per estimator refresh (TestFollowsSlowdown).
//
// # Widening after timeouts
//
// A dependency that becomes slower than the whole timeout sends no
// successes at all, and the estimator alone would keep the timeout where
// it was, every attempt timing out until the process restarts. So
// Config.WidenAfter (3) attempts in a row that time out, with no success
// between them, double the timeout, up to Ceiling; the answers that then
// arrive reach the estimator, and each success narrows the widened
// timeout back toward Margin times its latency, until the estimator has
// caught up (TestRecoversFromSlowdown: from 10 ms, a dependency now
// answering in 50 ms gets its first success on the tenth attempt). Only
// attempts that ran under the timeout now in force count toward the next
// doubling, so a burst of concurrent attempts that all timed out at the
// old value doubles it once. The price: a dependency that hangs outright
// walks the timeout up to Ceiling, 3 timeouts per doubling, and the first
// fast answers walk it back down.
//
// # With retry
//
// Adaptive is a [Source], which retry.Config.Timeouts takes:
//
//	t, _ := timeout.New(timeout.Config{})
//	p, _ := retry.New(retry.Config{Timeouts: t})
//
// The retry loop asks for the timeout before each attempt and reports
// each attempt's latency and outcome after it. An attempt whose timeout
// expires is a retryable Timeout; the caller's own deadline still bounds
// the whole call. With hedging (package hedge) inside a retry attempt, the
// attempt timeout bounds the primary and its hedges together.
package timeout
