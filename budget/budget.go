package budget

import "github.com/unherd/unherd/failure"

// Attempt reports how one attempt of a call ended.
type Attempt struct {
	// N is the attempt's number within its call: 1 for the first attempt.
	N int
	// Failed is true when the attempt failed.
	Failed bool
	// Class is how it failed; meaningful only when Failed.
	Class failure.Class
	// Charged is the class the retry that led to this attempt was
	// withdrawn as; meaningful only when N > 1. A token bucket refunds
	// that cost when the retry succeeds.
	Charged failure.Class
}

// Budget limits retries. The retry loop calls Withdraw before every retry
// and Record after every attempt that ran (a success or a failure of any
// class; not an attempt the caller abandoned or a guard rejected). Implementations must be safe for
// concurrent use; both methods are on every call's path, so they should
// not take a global lock. A Budget reads time from its own clock, so that
// the happy path pays for no clock read it does not need.
//
// This package implements it with [TokenBucket], [Ratio], [GRPC] and
// [Unlimited]; one value serves all the goroutines calling one dependency.
type Budget interface {
	// Withdraw asks to pay for one retry after an attempt that failed with
	// class c. It reports whether the retry may go ahead; false means the
	// budget is exhausted and the caller must stop.
	Withdraw(c failure.Class) bool
	// Record tells the budget how an attempt ended.
	Record(a Attempt)
}

// Refunder is implemented by budgets whose Withdraw takes something that
// can be given back. The retry loop calls Refund(c) when a retry it
// withdrew as class c is not made after all: a guard (a circuit breaker, a
// throttle) rejected its attempt locally, or the caller gave up during the
// wait. Refund must be safe for concurrent use.
type Refunder interface {
	Refund(c failure.Class)
}

// Tracker is implemented by budgets that count attempts in flight
// ([Concurrency]). The retry loop calls Start when it admits an attempt,
// and ends every started attempt exactly once: with Record when it ran
// to a result, or with Abandon when it did not (the caller gave up during
// it, it panicked, or its error was a local rejection from inside).
// Both must be safe for concurrent use.
type Tracker interface {
	Start(a Attempt)
	Abandon(a Attempt)
}

type unlimited struct{}

func (unlimited) Withdraw(failure.Class) bool { return true }
func (unlimited) Record(Attempt)              {}

// Unlimited is a Budget that always allows a retry. It is for the rare
// caller who must opt out of budgeting (a single batch job talking to a
// dependency it owns); a fleet of clients with unlimited retries turns a
// small error rate into a retry storm.
var Unlimited Budget = unlimited{}
