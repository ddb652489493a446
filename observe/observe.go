package observe

import (
	"context"
	"slices"
	"time"

	"github.com/unherd/unherd/failure"
)

// Observer receives the events of the policies it is given to. Observe is
// called synchronously on the call's goroutine (or, for a hedge, on the
// goroutine of the attempt concerned), outside every lock, with the
// call's context, so a tracing observer can find the span in it. It must
// be safe for concurrent use and should return quickly: it runs on the
// request path. An Observer that does not retain the Event allocates
// nothing when called: Event is passed by value.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Kind is what an Event reports.
type Kind uint8

// The kinds of events. Each says which of Event's fields it sets.
const (
	// Attempt: a retry policy admitted an attempt. Attempt is its number,
	// 1 for the first.
	Attempt Kind = iota + 1
	// Retry: an attempt failed and will be retried. Attempt is the failed
	// attempt's number, Err its error, Class its class, Delay the wait
	// before the next attempt.
	Retry
	// Success: a call made through a retry policy succeeded. Attempt is
	// the number of attempts made, Delay the total waited between them.
	Success
	// GiveUp: a call made through a retry policy stopped without success.
	// Reason is why (the retry package's sentinel: attempts exhausted,
	// budget exhausted, deadline, permanent, rejected, cancelled...),
	// Attempt the attempts made, Err the last attempt's error, Delay the
	// total waited between attempts. A call stopped by an empty retry
	// budget is a GiveUp whose Reason is retry.ErrBudgetExhausted.
	GiveUp
	// HedgeStarted: a hedged call started a hedge. Attempt is the
	// hedge's number (1 for the first hedge, the primary being 0), Delay
	// the hedge delay in force.
	HedgeStarted
	// HedgeWon: a call that started hedges was settled by a hedge.
	// Attempt is the number of hedges it started.
	HedgeWon
	// HedgeLost: a call that started hedges was settled by its primary,
	// or by no attempt (every one failed, or the caller gave up). Attempt
	// is the number of hedges it started.
	HedgeLost
	// BreakerTransition: a circuit breaker changed state, From -> To
	// ("closed", "open", "half-open").
	BreakerTransition
	// Throttled: a client-side throttle rejected a call locally.
	// Probability is the rejection probability in force.
	Throttled
	// HedgeDenied: the budget that pays for hedges refused a hedge a
	// call was due to start, or a guard rejected it; the call hedges no
	// more. Attempt is the number the hedge
	// would have had.
	HedgeDenied
	// RateRejected: a rate limiter (throttle.RateLimiter) rejected a call
	// locally, because its wait for a send token would have ended after
	// the caller's deadline. Delay is that wait, Rate the fill rate in
	// force.
	RateRejected
	// RateDelayed: a rate limiter made an attempt wait for a send token
	// before it started. Delay is the wait, Rate the fill rate in force.
	RateDelayed
	// RateCut: a throttling response set a rate limiter's fill rate by
	// multiplicative decrease (the first one turns the limiter on). Rate
	// is the new fill rate. The slow growth along the cubic between
	// throttling responses is not reported.
	RateCut
	// LimitChanged: a concurrency limiter (package limit) moved its
	// limit after a request's release. Limit is the new limit, InFlight
	// the requests in flight once that request's slot was released (or
	// handed to a waiter). The events of concurrent releases may reach
	// the observer out of order: for the current values read the
	// limiter's Limit and InFlight methods.
	LimitChanged
	// LimitRefused: a concurrency limiter refused a request, at once or
	// after it waited in the queue. Priority is the request's priority
	// class, Delay how long it waited in the queue (0 for a refusal at
	// once), Err the refusal (limit.ErrLimited, or the *limit.WaitError
	// Wait returned).
	LimitRefused
	// LimitWaited: a request left a concurrency limiter's queue. Priority
	// is its priority class, Delay the time it spent in the queue, Err
	// nil if it got a slot, else why it left without one: the
	// *limit.WaitError of a wait that timed out (also reported as a
	// LimitRefused) or the cause of its context's end.
	LimitWaited
	// NumKinds is one more than the largest Kind, for arrays indexed by
	// Kind.
	NumKinds
)

var kindNames = [...]string{Attempt: "attempt", Retry: "retry", Success: "success", GiveUp: "give_up",
	HedgeStarted: "hedge_started", HedgeWon: "hedge_won", HedgeLost: "hedge_lost",
	BreakerTransition: "breaker_transition", Throttled: "throttled", HedgeDenied: "hedge_denied",
	RateRejected: "rate_rejected", RateDelayed: "rate_delayed", RateCut: "rate_cut",
	LimitChanged: "limit_changed", LimitRefused: "limit_refused", LimitWaited: "limit_waited"}

// String returns the kind's snake_case name ("give_up", "hedge_won").
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one thing a policy did. Which fields are set depends on Kind
// (see the constants); the others are zero. An Event holds the errors it
// reports, not copies: an observer that keeps one keeps them alive.
type Event struct {
	Kind Kind
	// Attempt is an attempt number or count, as Kind says.
	Attempt int
	// Delay is a wait, as Kind says.
	Delay time.Duration
	// Class is the failed attempt's class (Retry).
	Class failure.Class
	// Err is an attempt's error (Retry, GiveUp), or a concurrency
	// limiter's refusal (LimitRefused, LimitWaited).
	Err error
	// Reason is why a call stopped (GiveUp): a sentinel error of package
	// retry.
	Reason error
	// Stop names Reason (GiveUp), for metrics labels.
	Stop Stop
	// From and To are a breaker's states (BreakerTransition).
	From, To string
	// Probability is a throttle's rejection probability (Throttled).
	Probability float64
	// Rate is a rate limiter's fill rate, in send tokens (attempts) per
	// second (RateRejected, RateDelayed, RateCut).
	Rate float64
	// Limit and InFlight are a concurrency limiter's new limit and the
	// requests it has in flight (LimitChanged).
	Limit, InFlight int
	// Priority is the priority class of a request a concurrency limiter
	// refused or queued (LimitRefused, LimitWaited): one of Priorities.
	Priority string
}

// Stop names why a call gave up: one value per stop reason of package
// retry, for a metric's label. The zero value is StopOther.
type Stop uint8

// The stop reasons, in the order of package retry's sentinels.
const (
	StopOther              Stop = iota // a reason not named below
	StopAttemptsExhausted              // retry.ErrAttemptsExhausted
	StopBudgetExhausted                // retry.ErrBudgetExhausted
	StopDeadline                       // retry.ErrDeadline
	StopPermanent                      // retry.ErrPermanent
	StopFinal                          // retry.ErrFinal
	StopCancelled                      // retry.ErrCancelled
	StopRejected                       // retry.ErrRejected
	StopServerDelayTooLong             // retry.ErrServerDelayTooLong
	// NumStops is the number of Stop values, for arrays indexed by Stop.
	NumStops
)

var stopNames = [NumStops]string{"other", "attempts_exhausted", "budget_exhausted", "deadline", "permanent",
	"final", "cancelled", "rejected", "server_delay_too_long"}

// String returns the stop's snake_case name ("budget_exhausted"), as
// metrics label it.
func (s Stop) String() string {
	if s < NumStops {
		return stopNames[s]
	}
	return "other"
}

// BreakerStates are the circuit breaker states an Event's From and To
// name, in the order StateIndex numbers them.
var BreakerStates = [...]string{"closed", "open", "half-open"}

// StateIndex returns the index of the breaker state name in
// BreakerStates, or -1 for another name.
func StateIndex(name string) int {
	return slices.Index(BreakerStates[:], name)
}

// Priorities are the priority classes of package limit that an Event's
// Priority names, in the order PriorityIndex numbers them, which is the
// order the limiter serves them in. A priority value package limit does
// not name is treated, and reported, as "sheddable".
var Priorities = [...]string{"critical", "normal", "sheddable"}

// PriorityIndex returns the index of the priority class name in
// Priorities, or -1 for another name.
func PriorityIndex(name string) int {
	return slices.Index(Priorities[:], name)
}

// Func adapts a function to an Observer.
type Func func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f Func) Observe(ctx context.Context, e Event) { f(ctx, e) }

// On returns an Observer that calls f with the events of kind k and
// ignores the rest: the shape of a single hook, such as one that runs
// before each retry's wait (On(Retry, f)) or once when a call gives up
// (On(GiveUp, f)).
func On(k Kind, f func(Event)) Observer { return on{k, f} }

type on struct {
	k Kind
	f func(Event)
}

func (o on) Observe(_ context.Context, e Event) {
	if e.Kind == o.k {
		o.f(e)
	}
}

// Multi returns an Observer that hands each event to every one of os, in
// order. Nil observers are skipped; with none left it returns nil, which
// the policies treat as no observer at all.
func Multi(os ...Observer) Observer {
	var keep multi
	for _, o := range os {
		if o != nil {
			keep = append(keep, o)
		}
	}
	switch len(keep) {
	case 0:
		return nil
	case 1:
		return keep[0]
	}
	return keep
}

type multi []Observer

func (m multi) Observe(ctx context.Context, e Event) {
	for _, o := range m {
		o.Observe(ctx, e)
	}
}
