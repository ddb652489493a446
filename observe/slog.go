package observe

import (
	"context"
	"log/slog"
)

// Logger returns an Observer that writes each event to l as one record,
// with the call's context (so a handler can add its trace), the message
// "unherd <kind>" and the attributes policy (name), and those of attempt,
// delay, class, err, reason, from, to, probability, rate, limit,
// in_flight and priority that the kind sets. Levels: Debug for attempts,
// successes, hedges, throttling, rate limiter waits and rejections and
// concurrency limiter refusals, waits and limit changes (one per call,
// or more, or one per window of requests), Info for retries and rate
// cuts, Warn for give-ups and breaker transitions. A record below l's
// level costs one Enabled check.
func Logger(l *slog.Logger, name string) Observer { return logger{l: l, name: name} }

type logger struct {
	l    *slog.Logger
	name string
}

// level is the record level of an event of kind k.
func level(k Kind) slog.Level {
	switch k {
	case Retry, RateCut:
		return slog.LevelInfo
	case GiveUp, BreakerTransition:
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

func (lg logger) Observe(ctx context.Context, e Event) {
	level := level(e.Kind)
	if !lg.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String("policy", lg.name))
	switch e.Kind {
	case Attempt, Success, HedgeWon, HedgeLost:
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
		if e.Kind == Success {
			attrs = append(attrs, slog.Duration("delay", e.Delay))
		}
	case Retry:
		attrs = append(attrs, slog.Int("attempt", e.Attempt), slog.Duration("delay", e.Delay),
			slog.String("class", e.Class.String()), slog.Any("err", e.Err))
	case GiveUp:
		attrs = append(attrs, slog.Any("reason", e.Reason), slog.Int("attempt", e.Attempt),
			slog.Duration("delay", e.Delay), slog.Any("err", e.Err))
	case HedgeStarted, HedgeDenied:
		attrs = append(attrs, slog.Int("attempt", e.Attempt), slog.Duration("delay", e.Delay))
	case BreakerTransition:
		attrs = append(attrs, slog.String("from", e.From), slog.String("to", e.To))
	case Throttled:
		attrs = append(attrs, slog.Float64("probability", e.Probability))
	case RateRejected, RateDelayed:
		attrs = append(attrs, slog.Duration("delay", e.Delay), slog.Float64("rate", e.Rate))
	case RateCut:
		attrs = append(attrs, slog.Float64("rate", e.Rate))
	case LimitChanged:
		attrs = append(attrs, slog.Int("limit", e.Limit), slog.Int("in_flight", e.InFlight))
	case LimitRefused, LimitWaited:
		attrs = append(attrs, slog.String("priority", e.Priority), slog.Duration("delay", e.Delay))
		if e.Err != nil {
			attrs = append(attrs, slog.Any("err", e.Err))
		}
	}
	lg.l.LogAttrs(ctx, level, "unherd "+e.Kind.String(), attrs...)
}
