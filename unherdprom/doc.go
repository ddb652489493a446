// Package unherdprom exports unherd's observe events as Prometheus
// metrics (client_golang).
//
// Register the collectors once, then give each dependency's policies an
// observer named after it:
//
//	m, err := unherdprom.New(prometheus.DefaultRegisterer)
//	obs := m.Observer("payments")
//	p, err := retry.New(retry.Config{Observer: obs})
//	h, err := hedge.New(hedge.Config{Observer: obs})
//
// Metrics, each with the label policy, named by Prometheus conventions
// (namespace unherd, base units, _total for counters):
//
//	unherd_retry_attempts_total                 attempts admitted, first attempts included
//	unherd_retry_retries_total{class}           failed attempts that will be retried
//	unherd_retry_delay_seconds_total            delays between attempts, added when each call ends
//	unherd_retry_calls_total{outcome}           calls ended: success, or why they gave up
//	                                            (budget_exhausted, attempts_exhausted, deadline,
//	                                            permanent, final, rejected, cancelled,
//	                                            server_delay_too_long, other)
//	unherd_hedge_started_total                  hedges started
//	unherd_hedge_denied_total                   hedges a budget or a guard refused
//	unherd_hedge_calls_total{result}            hedged calls settled by a hedge (won) or not (lost)
//	unherd_breaker_transitions_total{from,to}   circuit breaker state changes
//	unherd_breaker_state{state}                 1 for the current state, 0 for the others
//	unherd_throttle_rejections_total            calls a client-side throttle rejected
//	unherd_throttle_rejection_probability       its rejection probability at the latest rejection
//	unherd_rate_limiter_rejections_total        calls a rate limiter rejected (token past the deadline)
//	unherd_rate_limiter_delayed_total           attempts a rate limiter made wait for a token
//	unherd_rate_limiter_delay_seconds_total     the total of those waits
//	unherd_rate_limiter_cuts_total              throttling responses that cut its fill rate
//	unherd_rate_limiter_fill_rate               its fill rate (tokens/s) at its latest event
//	unherd_concurrency_refusals_total{priority} requests a concurrency limiter refused
//	unherd_concurrency_queue_duration_seconds{priority,result}
//	                                            histogram of the time requests spent in its
//	                                            queue; result admitted (got a slot) or gave_up
//	unherd_concurrency_limit                    its limit (LimiterCollector)
//	unherd_concurrency_in_flight                its requests in flight (LimiterCollector)
//
// A concurrency limiter (package limit) reports its refusals and its
// queue through the observer; its gauges come from [LimiterCollector],
// which reads the limiter when the registry is scraped:
//
//	l, err := limit.New(limit.Config{Observer: m.Observer("api")})
//	err = prometheus.Register(unherdprom.LimiterCollector("api", l))
//
// The retry share of traffic is rate(unherd_retry_retries_total) over
// rate(unherd_retry_attempts_total); budget refusals are
// unherd_retry_calls_total{outcome="budget_exhausted"}. Every label value
// is fixed when Observer is called, so an event is one or two atomic
// operations on a child the observer holds, with no allocation and no
// map lookup.
package unherdprom
