package unherdprom

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
)

// Metrics holds the collectors, registered once; Observer hands out an
// observe.Observer per policy name. It is safe for concurrent use.
type Metrics struct {
	attempts, retries, retryDelay, calls *prometheus.CounterVec
	hedges, hedgeCalls                   *prometheus.CounterVec
	transitions                          *prometheus.CounterVec
	breakerState                         *prometheus.GaugeVec
	throttled                            *prometheus.CounterVec
	throttleProbability                  *prometheus.GaugeVec
}

// Reasons are the values of the outcome label of unherd_retry_calls_total
// other than "success", one per stop reason of package retry ("other" for
// a reason it does not name).
var reasons = [...]struct {
	err   error
	label string
}{
	{retry.ErrAttemptsExhausted, "attempts_exhausted"},
	{retry.ErrBudgetExhausted, "budget_exhausted"},
	{retry.ErrDeadline, "deadline"},
	{retry.ErrPermanent, "permanent"},
	{retry.ErrFinal, "final"},
	{retry.ErrCancelled, "cancelled"},
	{retry.ErrRejected, "rejected"},
	{retry.ErrServerDelayTooLong, "server_delay_too_long"},
}

var classes = [...]failure.Class{failure.Transient, failure.Timeout, failure.Throttled, failure.Permanent}

// breaker states, as observe.Event's From and To name them.
var states = [...]string{"closed", "open", "half-open"}

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
		retryDelay:          counter("retry_delay_seconds_total", "Total of the delays a retry policy scheduled before retries."),
		calls:               counter("retry_calls_total", "Calls a retry policy ended, by outcome: success, or the reason it gave up (budget_exhausted, attempts_exhausted, deadline, permanent, ...).", "outcome"),
		hedges:              counter("hedge_started_total", "Hedges started."),
		hedgeCalls:          counter("hedge_calls_total", "Calls that started hedges, by whether a hedge (won) or the primary or no attempt (lost) settled them.", "result"),
		transitions:         counter("breaker_transitions_total", "Circuit breaker state changes.", "from", "to"),
		breakerState:        gauge("breaker_state", "1 for the circuit breaker's current state, 0 for the others, as of its last change.", "state"),
		throttled:           counter("throttle_rejections_total", "Calls a client-side throttle rejected locally."),
		throttleProbability: gauge("throttle_rejection_probability", "The client-side throttle's rejection probability at its latest rejection."),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.retries, m.retryDelay, m.calls, m.hedges, m.hedgeCalls,
		m.transitions, m.breakerState, m.throttled, m.throttleProbability} {
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
		attempts:    m.attempts.WithLabelValues(policy),
		retryDelay:  m.retryDelay.WithLabelValues(policy),
		success:     m.calls.WithLabelValues(policy, "success"),
		other:       m.calls.WithLabelValues(policy, "other"),
		hedges:      m.hedges.WithLabelValues(policy),
		hedgeWon:    m.hedgeCalls.WithLabelValues(policy, "won"),
		hedgeLost:   m.hedgeCalls.WithLabelValues(policy, "lost"),
		throttled:   m.throttled.WithLabelValues(policy),
		probability: m.throttleProbability.WithLabelValues(policy),
	}
	for i, c := range classes {
		o.retries[i] = m.retries.WithLabelValues(policy, c.String())
	}
	for i, r := range reasons {
		o.reasons[i] = m.calls.WithLabelValues(policy, r.label)
	}
	for i, from := range states {
		o.state[i] = m.breakerState.WithLabelValues(policy, from)
		for j, to := range states {
			o.transitions[i][j] = m.transitions.WithLabelValues(policy, from, to)
		}
	}
	return o
}

type observer struct {
	attempts, retryDelay, success, other prometheus.Counter
	retries                              [len(classes)]prometheus.Counter
	reasons                              [len(reasons)]prometheus.Counter
	hedges, hedgeWon, hedgeLost          prometheus.Counter
	transitions                          [len(states)][len(states)]prometheus.Counter
	state                                [len(states)]prometheus.Gauge
	throttled                            prometheus.Counter
	probability                          prometheus.Gauge
}

func (o *observer) Observe(_ context.Context, e observe.Event) {
	switch e.Kind {
	case observe.Attempt:
		o.attempts.Inc()
	case observe.Retry:
		if int(e.Class) < len(o.retries) {
			o.retries[e.Class].Inc()
		}
		o.retryDelay.Add(e.Delay.Seconds())
	case observe.Success:
		o.success.Inc()
	case observe.GiveUp:
		o.reason(e.Reason).Inc()
	case observe.HedgeStarted:
		o.hedges.Inc()
	case observe.HedgeWon:
		o.hedgeWon.Inc()
	case observe.HedgeLost:
		o.hedgeLost.Inc()
	case observe.BreakerTransition:
		from, to := stateIndex(e.From), stateIndex(e.To)
		if from < 0 || to < 0 {
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
	}
}

// reason returns the counter for a give-up's reason: the sentinel itself
// first (the common case: a comparison per reason), errors.Is after.
func (o *observer) reason(err error) prometheus.Counter {
	for i, r := range reasons {
		if err == r.err {
			return o.reasons[i]
		}
	}
	for i, r := range reasons {
		if errors.Is(err, r.err) {
			return o.reasons[i]
		}
	}
	return o.other
}

func stateIndex(s string) int {
	for i, n := range states {
		if n == s {
			return i
		}
	}
	return -1
}
