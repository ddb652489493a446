package unherdotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/unherd/unherd/observe"
)

// SpanEvents returns an observer that adds each event to the span in the
// call's context (trace.SpanFromContext), as a span event named
// "unherd.<kind>" ("unherd.retry", "unherd.give_up", "unherd.hedge_won")
// with the attributes the kind sets: unherd.attempt, unherd.delay (in
// seconds), unherd.failure.class, unherd.retry.outcome, exception.message
// (the attempt's error), unherd.breaker.from and .to,
// unherd.throttle.probability, unherd.rate_limiter.fill_rate,
// unherd.concurrency.limit, unherd.concurrency.in_flight and
// unherd.concurrency.priority. A context
// without a recording span costs one check. Unlike the metrics observers
// it allocates for each event it records (the SDK copies the
// attributes); combine both with observe.Multi.
func SpanEvents() observe.Observer { return spanEvents{} }

type spanEvents struct{}

var eventNames = func() (n [observe.NumKinds]string) {
	for k := observe.Attempt; k < observe.NumKinds; k++ {
		n[k] = "unherd." + k.String()
	}
	return n
}()

func (spanEvents) Observe(ctx context.Context, e observe.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || int(e.Kind) >= len(eventNames) || e.Kind == 0 {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	switch e.Kind {
	case observe.BreakerTransition:
		attrs = append(attrs, KeyFrom.String(e.From), KeyTo.String(e.To))
	case observe.Throttled:
		attrs = append(attrs, attribute.Float64("unherd.throttle.probability", e.Probability))
	case observe.RateRejected, observe.RateDelayed, observe.RateCut:
		attrs = append(attrs, attribute.Float64("unherd.rate_limiter.fill_rate", e.Rate))
		if e.Delay > 0 {
			attrs = append(attrs, attribute.Float64("unherd.delay", e.Delay.Seconds()))
		}
	case observe.LimitChanged:
		attrs = append(attrs, attribute.Int("unherd.concurrency.limit", e.Limit),
			attribute.Int("unherd.concurrency.in_flight", e.InFlight))
	case observe.LimitRefused, observe.LimitWaited:
		attrs = append(attrs, KeyPriority.String(e.Priority), attribute.Float64("unherd.delay", e.Delay.Seconds()))
	default:
		attrs = append(attrs, attribute.Int("unherd.attempt", e.Attempt))
		if e.Delay > 0 {
			attrs = append(attrs, attribute.Float64("unherd.delay", e.Delay.Seconds()))
		}
	}
	switch e.Kind {
	case observe.Retry:
		attrs = append(attrs, KeyClass.String(e.Class.String()))
	case observe.GiveUp:
		attrs = append(attrs, KeyOutcome.String(e.Stop.String()))
	}
	if e.Err != nil {
		attrs = append(attrs, attribute.String("exception.message", e.Err.Error()))
	}
	span.AddEvent(eventNames[e.Kind], trace.WithAttributes(attrs...))
}
