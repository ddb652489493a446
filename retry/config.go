package retry

import (
	"math/rand/v2"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry/internal/core"
	"github.com/unherd/unherd/timeout"
)

// BudgetExhaustion is what a call does when the budget refuses its retry;
// see Config.OnBudgetExhausted. The zero value is WaitSchedule.
type BudgetExhaustion = core.BudgetExhaustion

const (
	// WaitSchedule waits at the pace the rest of the schedule would have
	// retried (one jittered draw from the mean of the capped delays of
	// the retries left, from the throttled base after a throttling
	// error, and at least a server's delay), then returns
	// ErrBudgetExhausted: an empty budget does not speed up a caller that
	// loops. The default (the zero value).
	WaitSchedule = core.WaitSchedule
	// ReturnAtOnce returns ErrBudgetExhausted at once.
	ReturnAtOnce = core.ReturnAtOnce
	// WaitRetryDelay waits the delay the refused retry itself would have
	// waited (from the throttled base after a throttling error, or the
	// server's delay if longer), then returns ErrBudgetExhausted. It is
	// the AWS SDKs' rule for long-polling operations (SQS ReceiveMessage
	// and the like), as "Retry Behavior 2.1" specifies it; the SDKs for
	// Java v2 and Rust test it (1 s after a throttling error), while
	// aws-sdk-go-v2 waits from the normal base instead (50 ms), and
	// unherd follows the specification.
	WaitRetryDelay = core.WaitRetryDelay
)

// ErrInvalidConfig is wrapped by every error Validate and New return.
var ErrInvalidConfig = core.ErrInvalidConfig

// Config configures a [Policy]. The zero value is safe and is what most
// callers want: 3 attempts (the first plus 2 retries), full jitter from a
// 50 ms base (1 s after a throttling error) capped at 20 s, no per-attempt
// timeout, server-directed delays honoured up to 30 s, a single attempt
// when the context says an outer layer already retries, and a retry
// budget (a token bucket) of the Policy's own: the AWS SDKs' "Retry
// Behavior 2.1" ([AWS2026]) but for server delays; see the package doc
// for why.
type Config struct {
	// MaxAttempts bounds the attempts of one call, counting the first:
	// 3 means one attempt and up to two retries; 1 disables retries.
	// Zero means 3.
	MaxAttempts int

	// Backoff is the delay schedule between attempts. The zero value is
	// full jitter, base 50 ms, throttled base 1 s, cap 20 s.
	Backoff backoff.Schedule

	// AttemptTimeout bounds each attempt with a child context. Its expiry
	// is a retryable Timeout; the caller's own deadline is never retried.
	// Zero means no per-attempt timeout.
	AttemptTimeout time.Duration

	// Timeouts, if set, supplies each attempt's timeout at run time (an
	// adaptive timeout that tracks latency) and overrides AttemptTimeout.
	Timeouts timeout.Source

	// MaxServerDelay bounds a delay the server asked for (Retry-After,
	// gRPC pushback): when the server asks for longer, the loop stops with
	// ErrServerDelayTooLong instead of coming back before it allowed, or,
	// with ClampServerDelay, waits MaxServerDelay. Zero means
	// 30 s.
	//
	// A server-directed delay is a floor over the schedule, never a
	// replacement for it: the wait is the longer of the schedule's own
	// jittered delay for this retry and the server's delay (plus
	// ServerJitter), so a thousand clients told "Retry-After: 0", or given
	// an HTTP-date in the past, still spread over the schedule's window
	// instead of coming back at one instant.
	MaxServerDelay time.Duration

	// ClampServerDelay makes a server delay above MaxServerDelay wait
	// MaxServerDelay (still at least the schedule's delay) instead of
	// stopping the call. False, the default, stops it.
	ClampServerDelay bool

	// MaxServerExtra, if positive, bounds how far a server-directed delay
	// may take the wait beyond the schedule's delay: the wait is at most
	// the schedule's delay plus MaxServerExtra. The AWS SDKs' retry
	// behaviour 2.1 clamps x-amz-retry-after this way, with 5 s. Zero
	// means no such bound.
	MaxServerExtra time.Duration

	// ServerJitter is the largest fraction of a server-directed delay added
	// on top of it, so a thousand clients told "5 s" do not return in one
	// wall. It is only ever added, never subtracted. Zero means
	// 0.1 (up to 10% more); a negative value
	// means none (the wait is then exactly the longer of the server's
	// delay and the schedule's). It must be at most 1.
	ServerJitter float64

	// NestedAttempts replaces MaxAttempts when the context carries the mark
	// of WithOuterRetry: the call is made while serving a caller that
	// retries, so retrying here too would multiply attempts. Zero means
	// 1: no retries at this layer.
	NestedAttempts int

	// Classify decides how a failed attempt is treated. It is called once
	// per failed attempt, and its answer goes to the guards, the budget
	// and the retry decision alike. It is not called for a local
	// rejection (an error that is ErrRejected) or when the caller's
	// context has ended. Nil means the default rules
	// (engine.DefaultClassify, which a custom classifier can fall back
	// to for errors it does not recognise):
	//
	//   - an error judged Permanent ([Judge], [MarkPermanent]), an error
	//     that is ErrPermanent itself (errors.Is: returned or wrapped by
	//     the operation, or an inner Policy's *Error that stopped as
	//     permanent),
	//     or one with a negative server delay (a RetryAfter method), is
	//     Permanent;
	//   - an error judged Throttled (with or without a server delay) is
	//     Throttled;
	//   - an error judged Timeout is Timeout, and so is an error whose tree
	//     holds an error with a Timeout() bool method if the first such
	//     error (depth first, as errors.As finds it) reports true:
	//     context.DeadlineExceeded, a net.Error that timed out, and the
	//     loop's own expired attempt timeouts;
	//   - an error that is context.Canceled is Permanent: the caller's
	//     context is still live (the loop checks it first), so someone
	//     inside the operation cancelled it on purpose, and repeating it would
	//     override that choice. A classifier that knows better (a library
	//     that reports its own connection loss as Canceled) can return
	//     Transient;
	//   - everything else is Transient.
	//
	// The caller's own cancellation is decided before classification and
	// is never retried, whatever this returns. An error that is ErrFinal
	// (or judged Final) keeps the class these rules give it but ends the
	// call with ErrFinal.
	Classify func(error) failure.Class

	// Budget is consulted before every retry and told about every attempt.
	// Nil means a token bucket of its own with the AWS SDKs' "Retry
	// Behavior 2.1" quota (budget.TokenBucketConfig{}, which is
	// budget.AWS2026Quota, not the 2.0 quota of budget.AWSStandardQuota:
	// 500 tokens, a retry costs 14, 5 after a throttling error, a
	// first-attempt success puts 1 back), built by New, so each Policy,
	// that is each dependency, has its own. Share one
	// budget among Policies to pool them; use budget.Unlimited to opt out
	// (every retry the other rules allow is made).
	Budget budget.Budget

	// OnBudgetExhausted says what a call does when the budget refuses its
	// retry. WaitSchedule, the default, first waits at the pace of the
	// retries the call had left: one draw, with the schedule's jitter,
	// from the mean of their capped delays (from the throttled base
	// after a throttling error), and at least the server's delay when
	// the failure named one. A caller that loops (a worker polling a
	// queue, a closed population) so comes back with a new call as often
	// as the call would have retried without a budget, not sooner, and
	// not so much later that it misses the dependency's return. The wait
	// never reaches the deadline (when the draw would, the wait is drawn
	// again within the time left, from the refused retry's delay up) and
	// is cut short if the context ends. WaitRetryDelay waits only the
	// refused retry's own delay: with a schedule that grows, a caller
	// that loops comes back far sooner than its retries would have, so
	// it offers several times the load (see the package doc, "A refused
	// retry still waits"); it is the AWS SDKs' rule for long-polling
	// operations. ReturnAtOnce returns ErrBudgetExhausted at once: for
	// request paths whose caller does not loop and wants the error now.
	OnBudgetExhausted BudgetExhaustion

	// Guards are consulted before every attempt, in order, and told how it
	// ended: circuit breakers, client-side throttles. A rejection stops the
	// call at once with ErrRejected and is never retried. Nil means none.
	Guards []admission.Guard

	// Observer, if set, receives an observe.Event for every attempt
	// (Attempt), every retry before its wait (Retry, with the failed
	// attempt's error, its class and the delay about to be waited), and
	// the call's end (Success, or GiveUp once with its reason: attempts,
	// budget or deadline exhausted, a permanent error, a local rejection,
	// the caller's cancellation), with the call's context, outside any
	// lock, before Do returns. It is the call's one event stream: a
	// function is an observer through observe.Func, and observe.Multi
	// sends the stream to several. Nil means none, at no cost.
	Observer observe.Observer

	// Rand supplies the random draws for jitter. Nil means the global
	// math/rand/v2 source. A Policy used from many goroutines needs a
	// source that is safe for concurrent use; seeded sources are for tests.
	Rand rand.Source
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	cc := core.Config(*c)
	return cc.Validate()
}
