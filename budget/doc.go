// Package budget limits how many retries a client may make.
//
// Backoff and jitter spread retries out in time; they do not bound how many
// there are. During an outage every request fails and, with three attempts
// each, an open stream of 100 requests per second becomes 300 per second
// against a dependency that is already down. A retry budget caps retries
// as a share of traffic so that a fleet sheds load instead of storming.
//
// The [Budget] interface is what the retry loop consults: Withdraw before
// every retry, Record after every attempt. A Budget belongs to a
// dependency, not to a call: build one per dependency and share it among
// all the goroutines that call it, so that it sees all of that
// dependency's traffic. Every budget here is safe for concurrent use and
// takes no global lock on the hot path. A retry.Policy built without a
// budget gets a [TokenBucket] of its own with the defaults below.
//
// # Which budget
//
// [TokenBucket] is the AWS SDKs' standard-mode retry quota and the default,
// with the costs of their "Retry Behavior 2.1" quota ([AWS2026Quota]), not
// of the 2.0 quota ([AWSStandardQuota], 5 per retry): a bucket
// of 500 tokens; a retry costs 14, or 5 after a throttling error; a
// success puts back what its retry cost, or 1 for a first-attempt success.
// A healthy dependency keeps it full; a failing one empties it after 35
// retries (18 calls of 3 attempts), and from then on it sees first
// attempts only until calls succeed again. It needs no clock. Choose it
// by default, and wherever an outage should stop retries quickly and
// completely. Source: AWS SDKs and Tools Reference Guide, "Retry behavior"
// (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html).
// [AWSStandardQuota] is the older behaviour 2.0 (5 per retry, 10 after a
// timeout), which tolerates a higher failure rate before it stops retries.
//
// [Ratio] allows retries up to a share of recent requests: by default 10%
// of the requests of the last 10 s (Google SRE book, chapter "Handling
// Overload", https://sre.google/sre-book/handling-overload/), plus a floor
// of 10 retries per second so that a quiet client can still retry (window
// and floor from Finagle's RetryBudget and Linkerd's retry budgets,
// https://twitter.github.io/finagle/guide/Clients.html#retries). It scales
// with traffic and forgets an outage after one window; in an outage the
// dependency sees at most 1.1 times the request rate plus the floor.
// Choose it for high-traffic clients where a fixed bucket is either too
// small or too slow to refill, and for hedged requests: a hedge budget is
// a Ratio with a small share and no floor,
//
//	budget.NewRatio(budget.RatioConfig{Ratio: 0.05, NoFloor: true})
//
// [GRPC] is gRPC's retry throttling, from proposal A6 "gRPC Retry Design"
// (https://github.com/grpc/proposal/blob/master/A6-client-retries.md): a
// count of up to maxTokens that each retryable failure lowers by 1 and each
// success raises by tokenRatio; retries are allowed only while more than
// half of maxTokens remain. It follows the failure rate rather than the
// number of retries: retries stop when failures exceed about
// tokenRatio/(1+tokenRatio) of attempts. Choose it to behave exactly as a
// gRPC service config's retryThrottling does; defaults are A6's example
// (maxTokens 10, tokenRatio 0.1).
//
// [Concurrency] bounds the retries in flight rather than over time: a
// retry may start while fewer than 20% of the attempts in flight are
// retries, or fewer than 3 (Envoy's retry_budget, the Gateway API's
// GEP-3388 and failsafe-go's budget, with their defaults). It reacts at
// once, with no window to forget an outage, and caps a burst of failures
// at a fifth more load in flight. It counts attempts in flight through
// the retry engine, which tells it each attempt's and each hedge's start
// and end ([Tracker]). Choose it where load
// in flight is what the dependency cannot take, as under a concurrency
// limit (package limit).
//
// [Unlimited] opts out: every retry is allowed. It is for the rare caller
// who must, such as a batch job against a dependency it owns.
//
// # Time
//
// Only [Ratio] depends on time. It reads the clock from RatioConfig.Now
// (nil means the real clock, read as the monotonic time since the budget
// was made), and only in Withdraw: Record, on every call's path, reads no
// clock and takes no lock. WithdrawAt, RecordAt and Counts take the
// instant instead, so its arithmetic can be tested and simulated without
// any clock.
//
// # Configuration
//
// Each budget has a Config struct whose zero value is the documented
// default, a Validate method, and a constructor that validates. Invalid
// settings are errors that wrap [ErrInvalidConfig] and name the field.
package budget
