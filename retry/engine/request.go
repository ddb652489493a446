package engine

import (
	"context"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/internal/core"
)

// Request is one request sent to the dependency that a [Call] does not
// count as an attempt of its own: a hedge, a copy of the attempt in
// flight sent while that attempt has not answered (package hedge sends
// them), or the one request of a hedged call that no retry loop runs.
// The policy's guards admit it and hear how it ended, and its budget
// records it, as they do each attempt of a Call, so that every request
// reaches the same bookkeeping whoever sends it.
//
// A Request is a value whose End, Abandon or Cancel is called once, by
// one goroutine; the first of them counts and the others do nothing. The
// zero Request is not admitted: ending it does nothing.
type Request struct {
	r core.Request
}

// AdmitRequest admits a request to the dependency of p's calls, sent with
// ctx. For a copy of an attempt (isCopy true, a hedge) the budget pays
// first, withdrawing a transient retry; an empty budget refuses it with
// an [*retry.Error] of reason retry.ErrBudgetExhausted. Then the guards
// are asked in order, as [Call.Admit] asks them: a rejection returns
// retry.ErrRejected with the guard's error as Cause (retry.ErrCancelled
// if ctx ended while a guard waited), after the guards that had admitted
// the request hear it was abandoned and a copy's cost goes back to a
// budget.Refunder. A budget that tracks requests in flight
// (budget.Tracker) hears it start.
//
// How the budget hears of it when it ends: a request that is not a copy
// as a call's first attempt (budget.Attempt{N: 1}), a copy as a retry
// withdrawn as failure.Transient (budget.Attempt{N: 2, Charged:
// failure.Transient}), so that a budget counting requests counts each
// call once, and a token bucket refunds a copy that succeeded.
func AdmitRequest(ctx context.Context, p *retry.Policy, isCopy bool) (r Request, err error) {
	err = r.r.Admit(ctx, (*core.Policy)(p), isCopy)
	return r, err
}

// End reports that the request ran to a result: err is nil for a
// success. A failure is classified as the policy classifies an attempt's
// (Config.Classify, else [DefaultClassify]), and the guards and the
// budget hear of it with its class; a local rejection from inside
// (errors.Is(err, retry.ErrRejected)) is reported as Abandon reports.
func (r *Request) End(err error) { r.r.End(err) }

// Abandon reports a request that was sent but ended with no result the
// dependency can be judged by: another request answered first, or the
// caller gave up. The guards hear it was abandoned and a tracking budget
// that it ended; the budget records nothing, and a copy's cost stays
// paid, since the request did reach the dependency.
func (r *Request) Abandon() { r.r.Abandon() }

// Cancel reports a request admitted and never sent: Abandon, and a
// copy's cost goes back to a budget.Refunder.
func (r *Request) Cancel() { r.r.Cancel() }
