package limit

import (
	"context"
	"time"

	"github.com/unherd/unherd/observe"
)

// class is the name of p's priority class in events: one of
// observe.Priorities, a priority the package does not name being
// Sheddable.
func (p Priority) class() string { return observe.Priorities[p.rank()] }

// limitChanged reports a new limit n to the observer, which is not nil.
func (l *Limiter) limitChanged(n int) {
	l.obs.Observe(context.Background(), observe.Event{Kind: observe.LimitChanged, Limit: n, InFlight: l.InFlight()})
}

// refused reports a refusal to the observer, which is not nil.
func (l *Limiter) refused(ctx context.Context, p Priority, waited time.Duration, err error) {
	l.obs.Observe(ctx, observe.Event{Kind: observe.LimitRefused, Priority: p.class(), Delay: waited, Err: err})
}

// waited reports a request leaving the queue to the observer, which is
// not nil: err is nil if it got a slot.
func (l *Limiter) waited(ctx context.Context, p Priority, d time.Duration, err error) {
	l.obs.Observe(ctx, observe.Event{Kind: observe.LimitWaited, Priority: p.class(), Delay: d, Err: err})
}
