// Package breaker is a circuit breaker: it stops calling a dependency that
// keeps failing, and tries it again, carefully, after a pause.
//
// A [Breaker] is closed (calls go through, failures are counted), open
// (calls are rejected locally with [ErrOpen] for OpenDuration plus
// jitter) or half-open (a few probes go through; [ErrTooManyProbes] for
// the rest). It trips on ConsecutiveFailures failures in a row, or when
// FailureRate of at least MinCalls calls in a rolling Window failed. A
// failed probe opens it again; SuccessThreshold successful probes close
// it. Every state change starts a new generation; a result reported with
// a ticket from an earlier generation is ignored, so a slow call that
// started before the breaker opened cannot close it, and one that started
// before it closed cannot count against the new period.
//
// # Use
//
// As a admission.Guard, in retry.Config.Guards: the retry loop consults it
// before every attempt, retries included, and tells it how each attempt
// ended. A rejection stops the loop at once with retry.ErrRejected
// wrapping ErrOpen; it is never retried. For middleware, [Breaker.Allow]
// returns a done function to report the call's error with. ErrOpen and
// ErrTooManyProbes are made with engine.NewRejection and match
// retry.ErrRejected themselves, so a retry loop around an operation that
// consults the breaker through Allow stops at the first rejection too.
//
// What counts as a failure: by default Transient, Timeout and Throttled
// errors do, Permanent ones (not found, invalid argument: the dependency
// answered) do not, and abandoned attempts (the caller gave up) count as
// neither but free their probe slot. Settings.IsFailure overrides this.
//
// # Defaults and their sources
//
// The zero [Settings] trips after 5 consecutive failures (sony/gobreaker's
// default ReadyToTrip) or at a 50% failure rate over at least 20 calls in
// a 10 s window of 10 buckets (Netflix Hystrix's defaults:
// https://github.com/Netflix/Hystrix/wiki/Configuration), stays open 5 s
// (Hystrix's sleep window) plus up to 20% jitter so that clients that
// tripped together do not probe together, and closes after one successful
// probe (gobreaker's MaxRequests default). The pattern is Michael Nygard's,
// "Release It!" (Pragmatic Bookshelf, 2nd ed. 2018), chapter "Stability
// Patterns"; see also https://martinfowler.com/bliki/CircuitBreaker.html.
//
// # Cost
//
// In the closed state, Admit is one atomic load, and Done of a success is
// one atomic add on one of several padded counter stripes plus one load:
// no lock, no clock read, no allocation (BenchmarkBreakerAllowParallel).
// The clock is read only on failures and while the breaker is open or
// half-open. Successes reach the rolling window when the next failure
// folds the stripes in, spread evenly over the time since the previous
// failure (see internal/rolling); the failure rate is therefore exact for
// a steady stream and errs, for bursts, by at most the gap between two
// failures, which is short exactly when the rate matters. Allow's done
// function is cached per generation: it allocates once after each state
// change, never on the steady path.
//
// # Breaker, throttle or rate limiter
//
// A breaker answers "is the dependency down?": all or nothing, for hard
// outages (a dead host, an expired certificate), with a fast local
// failure instead of a timeout. Package throttle's Adaptive answers "is it
// overloaded?": it rejects a share of calls that grows as the dependency
// accepts fewer, so it degrades smoothly (Google SRE book, "Handling
// Overload"). Its RateLimiter paces a client that is throttled a lot (AWS
// SDK adaptive retry mode) by delaying calls rather than failing them.
// They compose: a breaker and a throttle in one Guards list each see every
// attempt.
package breaker
