package budget

// Class is how an attempt failed, as far as retry decisions and budgets are
// concerned. The retry package classifies errors into these; budgets charge
// by them.
type Class uint8

const (
	// Transient is an ordinary retryable failure: a reset connection, a
	// 502, a 503 without pushback.
	Transient Class = iota
	// Timeout is an attempt that ran out of time. Budgets may charge it
	// more: a timeout suggests an overloaded dependency.
	Timeout
	// Throttled is a failure in which the dependency asked for less
	// traffic: HTTP 429, gRPC RESOURCE_EXHAUSTED, 503 with Retry-After.
	Throttled
	// Permanent is a failure that repeating cannot fix: validation,
	// authorisation, not found. It is never retried.
	Permanent
)

var classNames = [...]string{Transient: "transient", Timeout: "timeout", Throttled: "throttled", Permanent: "permanent"}

// String returns the class's lower-case name.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Attempt reports how one attempt of a call ended.
type Attempt struct {
	// N is the attempt's number within its call: 1 for the first attempt.
	N int
	// Failed is true when the attempt failed.
	Failed bool
	// Class is how it failed; meaningful only when Failed.
	Class Class
	// Charged is the class the retry that led to this attempt was
	// withdrawn as; meaningful only when N > 1. A token bucket refunds
	// that cost when the retry succeeds.
	Charged Class
}

// Budget limits retries. The retry loop calls Withdraw before every retry
// and Record after every attempt. Implementations must be safe for
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
	Withdraw(c Class) bool
	// Record tells the budget how an attempt ended.
	Record(a Attempt)
}

type unlimited struct{}

func (unlimited) Withdraw(Class) bool { return true }
func (unlimited) Record(Attempt)      {}

// Unlimited is a Budget that always allows a retry. It is for the rare
// caller who must opt out of budgeting (a single batch job talking to a
// dependency it owns); a fleet of clients with unlimited retries turns a
// small error rate into a retry storm.
var Unlimited Budget = unlimited{}
