// Package observe carries what the resilience policies do to whoever
// watches: metrics, logs, traces.
//
// Give a policy an [Observer] in its configuration (retry.Config,
// hedge.Config, breaker.Settings, throttle.AdaptiveSettings and
// throttle.RateLimiterSettings all have an Observer field) and it
// reports an [Event] for every attempt, retry (with the failure's class
// and the delay), success and give-up (with the reason: a call stopped by
// its retry budget gives up with retry.ErrBudgetExhausted), every hedge
// started, won, lost or refused (by a budget or a guard), every breaker state
// change, every local throttling rejection, and every attempt a rate
// limiter delays or rejects and every cut of its rate. A concurrency
// limiter (limit.Config has an Observer field too) reports every change
// of its limit (with the requests in flight), every request it refuses
// (with the request's priority) and every request that leaves its queue
// (with the time it waited, and whether it got a slot). Events come with
// the context.Context of the call that caused them (a breaker's or a
// rate limiter's change caused by an attempt's outcome included, when
// the retry loop reports it), so a tracing observer can annotate the
// call's span. The exception is a concurrency limiter outside
// limit.Limiter.Wait: Acquire and a token's release take no context, so
// their events come with context.Background(). A logger for a retry
// policy:
//
//	p, err := retry.New(retry.Config{Observer: observe.Logger(slog.Default(), "payments")})
//
// [Logger] writes events to a log/slog Logger. Metrics adapters live in
// nested modules, so that this package needs nothing beyond the standard
// library: unherdprom for Prometheus (client_golang) and unherdotel for
// OpenTelemetry metrics, which also records gRPC's per-call retry
// metrics (gRFC A96: grpc.client.call.retries, grpc.client.call.hedges,
// grpc.client.call.retry_delay). [Multi] fans events out to several.
//
// # Cost
//
// Without an observer a policy does nothing more than one nil check per
// event site. With one, each event is one interface call with an Event
// passed by value: nothing is allocated unless the observer allocates.
// Observers run synchronously on the request path, outside every lock,
// and must be safe for concurrent use; keep them cheap (count, do not
// format) and leave aggregation to the metrics library.
package observe
