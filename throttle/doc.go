// Package throttle keeps a client from sending more than its dependency
// can take: [Adaptive], the client-side adaptive throttling of Google's SRE
// book, which rejects calls locally; and [RateLimiter], the client rate
// limiter of the AWS SDKs' adaptive retry mode, which delays them.
//
// Both implement admission.Guard: put them in retry.Config.Guards and the
// retry loop consults them before every attempt, retries included, and
// reports every attempt's outcome to them. A local rejection stops the
// loop at once with retry.ErrRejected wrapping ErrThrottled (or
// ErrRateLimited) and is never retried: retrying a call the client itself
// refused would defeat the point. Both are made with engine.NewRejection and
// match retry.ErrRejected themselves, so the loop does not retry them
// either when the operation consults a throttle and returns its
// rejection.
//
// # Adaptive (on by choice, cheap when healthy)
//
// Google SRE book, chapter 21 "Handling Overload", section "Client-Side
// Throttling" (https://sre.google/sre-book/handling-overload/): each client
// counts, over a rolling window, its requests and the ones the backend
// accepted, and rejects a new request locally with probability
//
//	max(0, (requests - K*accepts) / (requests + 1))
//
// With K = 2 (the book's default), nothing is rejected while at least half
// of the requests are accepted; beyond that the client sheds a growing
// share itself, so a backend that is refusing work does not also pay to
// refuse it, and an overloaded backend sees at most about K times what it
// accepts.
//
// Two defaults differ from the book, for recovery. The window is 10 s,
// not two minutes: a longer window reacts to a full outage only once the
// failures outnumber the accepts it still holds (a minute, for the
// book's), and forgets the outage as slowly. And local rejections are not
// counted as requests (AdaptiveSettings.CountRejections restores the
// book's counting): counted, they fill the window during an outage, so
// that afterwards the few calls still admitted are the only source of
// accepts and the probability falls only as the window forgets, about
// Window/2 * ln(requests in the window). TestOutageShedAndRecover runs a
// 100 calls/s client through a three-minute outage: the defaults shed half
// the calls after 8 s, admit 7% of the outage's calls, and admit 90%
// again 2 s after it ends; the book's settings shed half only after 88 s,
// admit 49%, and had not recovered 5 minutes later. In the simulator's
// outage scenario (open stream, published size) the throttle row now
// recovers 0.2 s after the return instead of 115 s.
//
// What "accepted" means is
// AdaptiveSettings.Accepted; by default a success or a Permanent error is
// accepted (the backend answered), and Throttled, Timeout and Transient
// errors are not (see DefaultAccepted for why Transient is not).
//
// Cost: while the probability is zero, Admit is one atomic load and the
// Done of an accepted call two atomic adds on one of several padded
// counter stripes: no lock, no clock read (BenchmarkThrottleParallel). The
// clock is read, and a lock taken, after calls that were not accepted and
// on every call while shedding. Striped counts reach the rolling window
// when it is next updated, spread evenly over the time since the previous
// update (internal/rolling).
//
// # RateLimiter (off unless added)
//
// AWS SDKs' "adaptive" retry mode
// (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html;
// botocore/retries/adaptive.py, aws-sdk-go-v2 aws/retry): a token bucket
// whose fill rate follows CUBIC congestion control (RFC 9438): a throttling
// response cuts the rate to 0.7 times the current send rate; successes
// grow it back along C*(t-K)^3 + Wmax with C = 0.4. The send rate is
// measured in 0.5 s buckets with smoothing 0.8; the fill rate never drops
// below 0.5 tokens/s and never exceeds twice the measured send rate.
// Nothing happens until the first throttling response.
//
// # Which one
//
//   - A circuit breaker (package breaker) for hard outages: the dependency
//     is down, fail fast and probe now and then (Michael Nygard, "Release
//     It!").
//   - Adaptive for overload: the dependency is up but refusing a share of
//     the work; shed roughly that share locally, fail fast, and let callers
//     degrade. The right default for request/response traffic with a
//     user waiting.
//   - RateLimiter for workloads that are throttled a lot and should pace
//     themselves rather than fail: batch jobs, queue consumers, bulk
//     uploads against an API with a quota, where finishing later is fine and
//     a failed call only has to be made again. It can delay calls, the
//     first one after a throttle included, which is why it is off by
//     default.
//
// They compose: one Guards list can hold a breaker, an Adaptive throttle and
// a RateLimiter, and each sees every attempt.
//
// # Observing
//
// Both take an observe.Observer in their settings: Adaptive reports every
// local rejection (observe.Throttled, with the probability), RateLimiter
// every attempt it delays (observe.RateDelayed) or rejects
// (observe.RateRejected), with the wait and the fill rate, and every cut
// of its rate by a throttling response (observe.RateCut). Each event
// carries the context of the call concerned.
package throttle
