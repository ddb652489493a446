package sim

import (
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
)

// tries is one call's retry state between events: what retry.Do carries
// from one turn of its loop to the next, for the models that call
// retry.Policy.Decide themselves under virtual time.
type tries struct {
	attempt int           // attempts made, counting the one in flight
	prev    time.Duration // the last retry's delay, for decorrelated jitter
	charged retry.Class   // the class the last retry was withdrawn as
}

// firstTry is the state of a call whose first attempt is in flight.
func firstTry() tries { return tries{attempt: 1} }

// decide asks p whether to retry the attempt in flight, which failed with
// err, and on a retry advances to the next attempt.
func (t *tries) decide(e *engine, p *retry.Policy, err error, nested bool) retry.Decision {
	d := p.Decide(retry.Step{Attempt: t.attempt, Err: err, Nested: nested, Now: e.Now(), Prev: t.prev,
		Charged: t.charged, Rand: e.u64()})
	if d.Reason == nil {
		t.attempt++
		t.prev, t.charged = d.Delay, d.Class
	}
	return d
}

// succeeded tells b that the attempt in flight succeeded (Decide tells it
// about failures).
func (t *tries) succeeded(b budget.Budget) {
	b.Record(budget.Attempt{N: t.attempt, Charged: t.charged})
}
