package unherdprom

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/observe"
)

// Metrics holds the collectors, registered once; Observer hands out an
// observe.Observer per policy name. It is safe for concurrent use.
type Metrics struct {
	attempts, retries, retryDelay, calls *prometheus.CounterVec
	hedges, hedgeCalls, hedgesDenied     *prometheus.CounterVec
	transitions                          *prometheus.CounterVec
	breakerState                         *prometheus.GaugeVec
	throttled                            *prometheus.CounterVec
	throttleProbability                  *prometheus.GaugeVec
	rateRejected, rateDelayed, rateDelay *prometheus.CounterVec
	rateCuts                             *prometheus.CounterVec
	fillRate                             *prometheus.GaugeVec
	refusals                             *prometheus.CounterVec
	queueTime                            *prometheus.HistogramVec
}

// QueueBuckets are the bucket bounds, in seconds, of
// unherd_concurrency_queue_duration_seconds: from 1 ms, below a
// congested queue's 5 ms wait, to 2.5 s, a long Config.MaxWait.
var QueueBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

var classes = [...]failure.Class{failure.Transient, failure.Timeout, failure.Throttled, failure.Permanent}

// New creates the collectors and registers them with reg
// (prometheus.DefaultRegisterer if nil). It returns an error if one is
// registered already.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "unherd", Name: name, Help: help}, append([]string{"policy"}, labels...))
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "unherd", Name: name, Help: help}, append([]string{"policy"}, labels...))
	}
	m := &Metrics{
		attempts:            counter("retry_attempts_total", "Attempts admitted by a retry policy, first attempts included."),
		retries:             counter("retry_retries_total", "Failed attempts a retry policy will retry, by the failure's class.", "class"),
		retryDelay:          counter("retry_delay_seconds_total", "Total of the delays between attempts of the calls a retry policy ended."),
		calls:               counter("retry_calls_total", "Calls a retry policy ended, by outcome: success, or the reason it gave up (budget_exhausted, attempts_exhausted, deadline, permanent, ...).", "outcome"),
		hedges:              counter("hedge_started_total", "Hedges started."),
		hedgesDenied:        counter("hedge_denied_total", "Hedges a budget or a guard refused."),
		hedgeCalls:          counter("hedge_calls_total", "Calls that started hedges, by whether a hedge (won) or the primary or no attempt (lost) settled them.", "result"),
		transitions:         counter("breaker_transitions_total", "Circuit breaker state changes.", "from", "to"),
		breakerState:        gauge("breaker_state", "1 for the circuit breaker's current state, 0 for the others, as of its last change.", "state"),
		throttled:           counter("throttle_rejections_total", "Calls a client-side throttle rejected locally."),
		throttleProbability: gauge("throttle_rejection_probability", "The client-side throttle's rejection probability at its latest rejection."),
		rateRejected:        counter("rate_limiter_rejections_total", "Calls a rate limiter rejected locally: the wait for a send token would have passed the deadline."),
		rateDelayed:         counter("rate_limiter_delayed_total", "Attempts a rate limiter made wait for a send token."),
		rateDelay:           counter("rate_limiter_delay_seconds_total", "Total of the waits for a send token a rate limiter imposed."),
		rateCuts:            counter("rate_limiter_cuts_total", "Throttling responses that cut a rate limiter's fill rate."),
		fillRate:            gauge("rate_limiter_fill_rate", "A rate limiter's fill rate, in send tokens (attempts) per second, at its latest cut, wait or rejection."),
		refusals:            counter("concurrency_refusals_total", "Requests a concurrency limiter refused, at once or after waiting in its queue, by priority.", "priority"),
		queueTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "unherd", Name: "concurrency_queue_duration_seconds",
			Help:    "Time requests spent in a concurrency limiter's queue, by priority and by whether they got a slot (admitted) or left without one (gave_up).",
			Buckets: QueueBuckets}, []string{"policy", "priority", "result"}),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.retries, m.retryDelay, m.calls, m.hedges, m.hedgesDenied, m.hedgeCalls,
		m.transitions, m.breakerState, m.throttled, m.throttleProbability, m.rateRejected, m.rateDelayed, m.rateDelay,
		m.rateCuts, m.fillRate, m.refusals, m.queueTime} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Observer returns the observer for the policy named policy (the value of
// every metric's policy label). Give each dependency's policies their own
// name; the retry policy, hedger, breaker and throttle of one dependency
// may share one. All children are created here, so an event costs a few
// atomic operations and allocates nothing.
func (m *Metrics) Observer(policy string) observe.Observer {
	o := &observer{
		attempts:     m.attempts.WithLabelValues(policy),
		retryDelay:   m.retryDelay.WithLabelValues(policy),
		success:      m.calls.WithLabelValues(policy, "success"),
		hedges:       m.hedges.WithLabelValues(policy),
		denied:       m.hedgesDenied.WithLabelValues(policy),
		hedgeWon:     m.hedgeCalls.WithLabelValues(policy, "won"),
		hedgeLost:    m.hedgeCalls.WithLabelValues(policy, "lost"),
		throttled:    m.throttled.WithLabelValues(policy),
		probability:  m.throttleProbability.WithLabelValues(policy),
		rateRejected: m.rateRejected.WithLabelValues(policy),
		rateDelayed:  m.rateDelayed.WithLabelValues(policy),
		rateDelay:    m.rateDelay.WithLabelValues(policy),
		rateCuts:     m.rateCuts.WithLabelValues(policy),
		fillRate:     m.fillRate.WithLabelValues(policy),
	}
	for i, c := range classes {
		o.retries[i] = m.retries.WithLabelValues(policy, c.String())
	}
	for i := range o.stops {
		o.stops[i] = m.calls.WithLabelValues(policy, observe.Stop(i).String())
	}
	for i, p := range observe.Priorities {
		o.refusals[i] = m.refusals.WithLabelValues(policy, p)
		o.admitted[i] = m.queueTime.WithLabelValues(policy, p, "admitted")
		o.gaveUp[i] = m.queueTime.WithLabelValues(policy, p, "gave_up")
	}
	for i, from := range observe.BreakerStates {
		o.state[i] = m.breakerState.WithLabelValues(policy, from)
		for j, to := range observe.BreakerStates {
			if i != j { // a state never changes into itself: no series for that
				o.transitions[i][j] = m.transitions.WithLabelValues(policy, from, to)
			}
		}
	}
	return o
}

const nstates = len(observe.BreakerStates)

type observer struct {
	attempts, retryDelay, success prometheus.Counter
	retries                       [len(classes)]prometheus.Counter
	stops                         [observe.NumStops]prometheus.Counter
	hedges, denied                prometheus.Counter
	hedgeWon, hedgeLost           prometheus.Counter
	transitions                   [nstates][nstates]prometheus.Counter // nil where from == to
	state                         [nstates]prometheus.Gauge
	throttled                     prometheus.Counter
	probability                   prometheus.Gauge
	rateRejected, rateDelayed     prometheus.Counter
	rateDelay, rateCuts           prometheus.Counter
	fillRate                      prometheus.Gauge
	refusals                      [npriorities]prometheus.Counter
	admitted, gaveUp              [npriorities]prometheus.Observer
}

const npriorities = len(observe.Priorities)

func (o *observer) Observe(_ context.Context, e observe.Event) {
	switch e.Kind {
	case observe.Attempt:
		o.attempts.Inc()
	case observe.Retry:
		if int(e.Class) < len(o.retries) {
			o.retries[e.Class].Inc()
		}
	case observe.Success, observe.GiveUp:
		if e.Kind == observe.Success {
			o.success.Inc()
		} else if e.Stop < observe.NumStops {
			o.stops[e.Stop].Inc()
		}
		if e.Delay > 0 {
			o.retryDelay.Add(e.Delay.Seconds())
		}
	case observe.HedgeStarted:
		o.hedges.Inc()
	case observe.HedgeDenied:
		o.denied.Inc()
	case observe.HedgeWon:
		o.hedgeWon.Inc()
	case observe.HedgeLost:
		o.hedgeLost.Inc()
	case observe.BreakerTransition:
		from, to := observe.StateIndex(e.From), observe.StateIndex(e.To)
		if from < 0 || to < 0 || from == to {
			return
		}
		o.transitions[from][to].Inc()
		for i, g := range o.state {
			v := 0.0
			if i == to {
				v = 1
			}
			g.Set(v)
		}
	case observe.Throttled:
		o.throttled.Inc()
		o.probability.Set(e.Probability)
	case observe.RateRejected:
		o.rateRejected.Inc()
		o.fillRate.Set(e.Rate)
	case observe.RateDelayed:
		o.rateDelayed.Inc()
		o.rateDelay.Add(e.Delay.Seconds())
		o.fillRate.Set(e.Rate)
	case observe.RateCut:
		o.rateCuts.Inc()
		o.fillRate.Set(e.Rate)
	case observe.LimitRefused:
		if i := observe.PriorityIndex(e.Priority); i >= 0 {
			o.refusals[i].Inc()
		}
	case observe.LimitWaited:
		i := observe.PriorityIndex(e.Priority)
		switch {
		case i < 0:
		case e.Err == nil:
			o.admitted[i].Observe(e.Delay.Seconds())
		default:
			o.gaveUp[i].Observe(e.Delay.Seconds())
		}
	}
}

// LimiterCollector returns a collector of a concurrency limiter's
// gauges, unherd_concurrency_limit (its limit) and
// unherd_concurrency_in_flight (its requests in flight), with the label
// policy: register it with the registry New was given, under the name
// given to the limiter's Observer. It reads l.Limit() and l.InFlight()
// when the registry is scraped, so the gauges are current even though
// the LimitChanged events of concurrent releases may arrive out of
// order, and the limiter's hot path does nothing for them. Each
// limiter needs its own policy name: a registry refuses a second
// collector with the same one.
func LimiterCollector(policy string, l *limit.Limiter) prometheus.Collector {
	labels := prometheus.Labels{"policy": policy}
	return &limiterCollector{l: l,
		limit: prometheus.NewDesc("unherd_concurrency_limit",
			"A concurrency limiter's limit: how many requests it may have in flight at once.", nil, labels),
		inFlight: prometheus.NewDesc("unherd_concurrency_in_flight",
			"Requests a concurrency limiter has admitted and not yet released.", nil, labels),
	}
}

type limiterCollector struct {
	l               *limit.Limiter
	limit, inFlight *prometheus.Desc
}

func (c *limiterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.inFlight
}

func (c *limiterCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(c.l.Limit()))
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(c.l.InFlight()))
}
