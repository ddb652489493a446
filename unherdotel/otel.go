package unherdotel

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
)

// ScopeName is the instrumentation scope of the meters this package
// creates.
const ScopeName = "github.com/unherd/unherd/unherdotel"

// Attribute keys on the instruments.
const (
	KeyPolicy  = attribute.Key("unherd.policy")        // the name given to Observer
	KeyClass   = attribute.Key("unherd.failure.class") // transient, timeout, throttled, permanent
	KeyOutcome = attribute.Key("unherd.retry.outcome") // success, or the give-up reason
	KeyResult  = attribute.Key("unherd.hedge.result")  // won, lost
	KeyFrom    = attribute.Key("unherd.breaker.from")  // closed, open, half-open
	KeyTo      = attribute.Key("unherd.breaker.to")    // closed, open, half-open
	KeyMethod  = attribute.Key("grpc.method")          // gRFC A66's full method name
	KeyTarget  = attribute.Key("grpc.target")          // gRFC A66's channel target
)

var classes = [...]failure.Class{failure.Transient, failure.Timeout, failure.Throttled, failure.Permanent}

// Metrics holds the instruments; Observer hands out an observe.Observer
// per policy. It is safe for concurrent use.
type Metrics struct {
	meter                                                                        metric.Meter
	attempts, retries, calls, hedges, denied, hedgeCalls, transitions, throttled metric.Int64ObservableCounter
	retryDelay                                                                   metric.Float64ObservableCounter
	// gRFC A96's per-call histograms, recorded only by GRPCObserver.
	callRetries, callHedges metric.Int64Histogram
	callRetryDelay          metric.Float64Histogram
}

// New creates the instruments on mp's meter for ScopeName. Instrument
// names follow the OpenTelemetry naming rules (dotted, lower case, units
// in UCUM: "s", "{retry}"); no semantic convention defines retry or hedge
// metrics in general, so they live under "unherd."; the gRPC ones are
// gRFC A96's:
//
//	unherd.retry.attempts      counter  {attempt}     attempts admitted
//	unherd.retry.retries       counter  {retry}       failed attempts to be retried, by unherd.failure.class
//	unherd.retry.delay         counter  s             delays between attempts, added when a call ends
//	unherd.retry.calls         counter  {call}        calls ended, by unherd.retry.outcome
//	unherd.hedge.started       counter  {hedge}       hedges started
//	unherd.hedge.denied        counter  {hedge}       hedges the hedge budget refused
//	unherd.hedge.calls         counter  {call}        hedged calls, by unherd.hedge.result
//	unherd.breaker.transitions counter  {transition}  breaker changes, by unherd.breaker.from and .to
//	unherd.throttle.rejections counter  {call}        local throttling rejections
//	grpc.client.call.retries     histogram {retry}  retries per call, 0 not reported (GRPCObserver)
//	grpc.client.call.hedges      histogram {hedge}  hedges per call, 0 not reported (GRPCObserver)
//	grpc.client.call.retry_delay histogram s        total delay between attempts per call (GRPCObserver)
//
// The unherd.* counters are asynchronous: an event adds to an atomic
// counter the observer holds, and a callback reports the totals when the
// reader collects. The gRPC histograms are recorded per call.
func New(mp metric.MeterProvider) (*Metrics, error) {
	m := mp.Meter(ScopeName)
	m2 := Metrics{meter: m}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	m2.attempts = counter("unherd.retry.attempts", "{attempt}", "Attempts admitted by a retry policy, first attempts included.")
	m2.retries = counter("unherd.retry.retries", "{retry}", "Failed attempts a retry policy will retry.")
	m2.calls = counter("unherd.retry.calls", "{call}", "Calls a retry policy ended, by outcome.")
	m2.hedges = counter("unherd.hedge.started", "{hedge}", "Hedges started.")
	m2.denied = counter("unherd.hedge.denied", "{hedge}", "Hedges the hedge budget refused.")
	m2.hedgeCalls = counter("unherd.hedge.calls", "{call}", "Calls that started hedges, by result.")
	m2.transitions = counter("unherd.breaker.transitions", "{transition}", "Circuit breaker state changes.")
	m2.throttled = counter("unherd.throttle.rejections", "{call}", "Calls a client-side throttle rejected locally.")
	var err error
	m2.retryDelay, err = m.Float64ObservableCounter("unherd.retry.delay", metric.WithUnit("s"),
		metric.WithDescription("Delays between the attempts of the calls a retry policy ended."))
	errs = append(errs, err)
	m2.callRetries, err = m.Int64Histogram("grpc.client.call.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Number of retries during the client call. If there were no retries, 0 is not reported."),
		metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5))
	errs = append(errs, err)
	m2.callHedges, err = m.Int64Histogram("grpc.client.call.hedges", metric.WithUnit("{hedge}"),
		metric.WithDescription("Number of hedges during the client call. If there were no hedges, 0 is not reported."),
		metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5))
	errs = append(errs, err)
	m2.callRetryDelay, err = m.Float64Histogram("grpc.client.call.retry_delay", metric.WithUnit("s"),
		metric.WithDescription("Total time of delay while there is no active attempt during the client call."),
		metric.WithExplicitBucketBoundaries(latency...))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &m2, nil
}

// latency are gRFC A66's latency bucket boundaries, in seconds.
var latency = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
	0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25,
	0.3, 0.4, 0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}

// Observer returns the observer for the policy named policy (attribute
// unherd.policy), recording the unherd.* instruments. It registers a
// callback with the meter that lives as long as the MeterProvider: make
// one observer per dependency and keep it, not one per call. Every
// attribute set is built here, so an event builds none.
func (m *Metrics) Observer(policy string) (observe.Observer, error) {
	return m.observer(false, attribute.String(string(KeyPolicy), policy))
}

// GRPCObserver returns an observer for the calls to one gRPC method on
// one target: it records the unherd.* instruments with attributes
// grpc.method and grpc.target and, per call, gRFC A96's
// grpc.client.call.retries (when there were retries),
// grpc.client.call.retry_delay and grpc.client.call.hedges (when there
// were hedges). method is the full method name ("pkg.Service/Method"),
// target the channel's target URI, as gRFC A66 defines them. Like
// Observer, make one per method and target and keep it.
func (m *Metrics) GRPCObserver(method, target string) (observe.Observer, error) {
	return m.observer(true, attribute.String(string(KeyMethod), method), attribute.String(string(KeyTarget), target))
}

const nstates = len(observe.BreakerStates)

// observer counts events in atomics; its callback reports them.
type observer struct {
	m       *Metrics
	grpc    bool
	baseRec []metric.RecordOption

	attempts, hedges, denied, won, lost, throttled, success atomic.Int64
	delay                                                   atomic.Int64 // nanoseconds
	retries                                                 [len(classes)]atomic.Int64
	stops                                                   [observe.NumStops]atomic.Int64
	transitions                                             [nstates][nstates]atomic.Int64

	// The attribute sets the callback reports each counter with.
	base, successSet, wonSet, lostSet metric.ObserveOption
	classSets                         [len(classes)]metric.ObserveOption
	stopSets                          [observe.NumStops]metric.ObserveOption
	transitionSets                    [nstates][nstates]metric.ObserveOption
}

func (m *Metrics) observer(grpc bool, base ...attribute.KeyValue) (observe.Observer, error) {
	set := func(kv ...attribute.KeyValue) attribute.Set {
		return attribute.NewSet(append(append([]attribute.KeyValue(nil), base...), kv...)...)
	}
	with := func(kv ...attribute.KeyValue) metric.MeasurementOption { return metric.WithAttributeSet(set(kv...)) }
	o := &observer{m: m, grpc: grpc, baseRec: []metric.RecordOption{with()}, base: with(),
		successSet: with(KeyOutcome.String("success")), wonSet: with(KeyResult.String("won")), lostSet: with(KeyResult.String("lost"))}
	for i, c := range classes {
		o.classSets[i] = with(KeyClass.String(c.String()))
	}
	for i := range o.stopSets {
		o.stopSets[i] = with(KeyOutcome.String(observe.Stop(i).String()))
	}
	for i, from := range observe.BreakerStates {
		for j, to := range observe.BreakerStates {
			o.transitionSets[i][j] = with(KeyFrom.String(from), KeyTo.String(to))
		}
	}
	_, err := m.meter.RegisterCallback(o.report, m.attempts, m.retries, m.calls, m.hedges, m.denied, m.hedgeCalls,
		m.transitions, m.throttled, m.retryDelay)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// report is the callback: it reports every counter that is not zero.
func (o *observer) report(_ context.Context, r metric.Observer) error {
	m := o.m
	put := func(c metric.Int64ObservableCounter, v *atomic.Int64, opt metric.ObserveOption) {
		if n := v.Load(); n != 0 {
			r.ObserveInt64(c, n, opt)
		}
	}
	put(m.attempts, &o.attempts, o.base)
	for i := range o.retries {
		put(m.retries, &o.retries[i], o.classSets[i])
	}
	put(m.calls, &o.success, o.successSet)
	for i := range o.stops {
		put(m.calls, &o.stops[i], o.stopSets[i])
	}
	put(m.hedges, &o.hedges, o.base)
	put(m.denied, &o.denied, o.base)
	put(m.hedgeCalls, &o.won, o.wonSet)
	put(m.hedgeCalls, &o.lost, o.lostSet)
	for i := range o.transitions {
		for j := range o.transitions[i] {
			put(m.transitions, &o.transitions[i][j], o.transitionSets[i][j])
		}
	}
	put(m.throttled, &o.throttled, o.base)
	if d := o.delay.Load(); d != 0 {
		r.ObserveFloat64(m.retryDelay, float64(d)/1e9, o.base)
	}
	return nil
}

func (o *observer) Observe(ctx context.Context, e observe.Event) {
	switch e.Kind {
	case observe.Attempt:
		o.attempts.Add(1)
	case observe.Retry:
		if int(e.Class) < len(o.retries) {
			o.retries[e.Class].Add(1)
		}
	case observe.Success, observe.GiveUp:
		if e.Kind == observe.Success {
			o.success.Add(1)
		} else if e.Stop < observe.NumStops {
			o.stops[e.Stop].Add(1)
		}
		if e.Delay > 0 {
			o.delay.Add(int64(e.Delay))
		}
		if o.grpc {
			if e.Attempt > 1 {
				o.m.callRetries.Record(ctx, int64(e.Attempt-1), o.baseRec...)
			}
			o.m.callRetryDelay.Record(ctx, e.Delay.Seconds(), o.baseRec...)
		}
	case observe.HedgeStarted:
		o.hedges.Add(1)
	case observe.HedgeDenied:
		o.denied.Add(1)
	case observe.HedgeWon, observe.HedgeLost:
		if e.Kind == observe.HedgeWon {
			o.won.Add(1)
		} else {
			o.lost.Add(1)
		}
		if o.grpc && e.Attempt > 0 {
			o.m.callHedges.Record(ctx, int64(e.Attempt), o.baseRec...)
		}
	case observe.BreakerTransition:
		from, to := observe.StateIndex(e.From), observe.StateIndex(e.To)
		if from >= 0 && to >= 0 {
			o.transitions[from][to].Add(1)
		}
	case observe.Throttled:
		o.throttled.Add(1)
	}
}
