// Package budget limits how many retries a client may make.
//
// Backoff and jitter spread retries out in time; they do not bound how many
// there are. During an outage every request fails and, with three attempts
// each, an open stream of 100 requests per second becomes 300 per second
// against a dependency that is already down. A retry budget caps retries
// as a share of traffic so that a fleet sheds load instead of storming.
//
// The [Budget] interface is what the retry loop consults: Withdraw before
// every retry, Record after every attempt. [Unlimited] opts out.
package budget
