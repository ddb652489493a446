package unherdotel

import (
	"context"
	"errors"
	"math"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/observe"
)

// ScopeName is the instrumentation scope of the meters this package
// creates.
const ScopeName = "github.com/unherd/unherd/unherdotel"

// Attribute keys on the instruments.
const (
	KeyPolicy      = attribute.Key("unherd.policy")                   // the name given to Observer
	KeyClass       = attribute.Key("unherd.failure.class")            // transient, timeout, throttled, permanent
	KeyOutcome     = attribute.Key("unherd.retry.outcome")            // success, or the give-up reason
	KeyResult      = attribute.Key("unherd.hedge.result")             // won, lost
	KeyFrom        = attribute.Key("unherd.breaker.from")             // closed, open, half-open
	KeyTo          = attribute.Key("unherd.breaker.to")               // closed, open, half-open
	KeyPriority    = attribute.Key("unherd.concurrency.priority")     // critical, normal, sheddable
	KeyQueueResult = attribute.Key("unherd.concurrency.queue.result") // admitted, gave_up
	KeyMethod      = attribute.Key("grpc.method")                     // gRFC A66's full method name
	KeyTarget      = attribute.Key("grpc.target")                     // gRFC A66's channel target
)

var classes = [...]failure.Class{failure.Transient, failure.Timeout, failure.Throttled, failure.Permanent}

// Metrics holds the instruments; Observer hands out an observe.Observer
// per policy. It is safe for concurrent use.
type Metrics struct {
	meter                                                                        metric.Meter
	attempts, retries, calls, hedges, denied, hedgeCalls, transitions, throttled metric.Int64ObservableCounter
	retryDelay                                                                   metric.Float64ObservableCounter
	rateRejected, rateDelayed, rateCuts                                          metric.Int64ObservableCounter
	rateDelay                                                                    metric.Float64ObservableCounter
	fillRate                                                                     metric.Float64ObservableGauge
	refusals                                                                     metric.Int64ObservableCounter
	queueTime                                                                    metric.Float64Histogram
	limit, inFlight                                                              metric.Int64ObservableGauge
	// gRFC A96's per-call histograms, recorded only by GRPCObserver.
	callRetries, callHedges metric.Int64Histogram
	callRetryDelay          metric.Float64Histogram
	// prod, if not nil, aggregates them instead (see New).
	prod *Producer
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
//	unherd.hedge.denied        counter  {hedge}       hedges a budget or a guard refused
//	unherd.hedge.calls         counter  {call}        hedged calls, by unherd.hedge.result
//	unherd.breaker.transitions counter  {transition}  breaker changes, by unherd.breaker.from and .to
//	unherd.throttle.rejections counter  {call}        local throttling rejections
//	unherd.rate_limiter.rejections counter {call}     calls a rate limiter rejected (token past the deadline)
//	unherd.rate_limiter.delayed    counter {attempt}  attempts a rate limiter made wait for a token
//	unherd.rate_limiter.delay      counter s          the total of those waits
//	unherd.rate_limiter.cuts       counter {cut}      throttling responses that cut the fill rate
//	unherd.rate_limiter.fill_rate  gauge   {token}/s  the fill rate at the latest of those events
//	unherd.concurrency.refusals       counter   {request} requests a concurrency limiter refused, by unherd.concurrency.priority
//	unherd.concurrency.queue.duration histogram s         time requests spent in its queue, by unherd.concurrency.priority
//	                                                      and unherd.concurrency.queue.result (admitted, gave_up)
//	unherd.concurrency.limit          gauge     {request} its limit (RegisterLimiter)
//	unherd.concurrency.in_flight      gauge     {request} its requests in flight (RegisterLimiter)
//	grpc.client.call.retries     histogram {retry}  retries per call, 0 not reported (GRPCObserver)
//	grpc.client.call.hedges      histogram {hedge}  hedges per call, 0 not reported (GRPCObserver)
//	grpc.client.call.retry_delay histogram s        total delay between attempts per call that retried (GRPCObserver)
//
// The unherd.* counters are asynchronous: an event adds to an atomic
// counter the observer holds, and a callback reports the totals when the
// reader collects. The queue duration is a synchronous histogram, recorded
// when a request leaves the queue: a request that waited has already
// paid for a timer and a lock.
//
// prod is where the gRPC histograms go. Given the Producer registered
// with mp's readers (sdkmetric.WithProducer(prod) when each reader is
// made), the gRPC observers aggregate them themselves, a few atomic adds
// per call that retried or hedged, and prod hands them to each reader
// when it collects. If mp collects without it (prod is registered with
// none of mp's readers), prod reports ErrProducerNotRegistered to the
// OpenTelemetry error handler and the observers record the histograms
// through mp's histogram instruments from then on; the calls that ended
// before are not in them. Nil records them through mp's instruments from
// the start: several times the cost per call, but with exemplars, views
// and the reader's temporality (see the package doc). Give one Producer
// to the Metrics of one MeterProvider only.
func New(mp metric.MeterProvider, prod *Producer) (*Metrics, error) {
	m := mp.Meter(ScopeName)
	m2 := Metrics{meter: m, prod: prod}
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
	m2.denied = counter("unherd.hedge.denied", "{hedge}", "Hedges a budget or a guard refused.")
	m2.hedgeCalls = counter("unherd.hedge.calls", "{call}", "Calls that started hedges, by result.")
	m2.transitions = counter("unherd.breaker.transitions", "{transition}", "Circuit breaker state changes.")
	m2.throttled = counter("unherd.throttle.rejections", "{call}", "Calls a client-side throttle rejected locally.")
	m2.rateRejected = counter("unherd.rate_limiter.rejections", "{call}",
		"Calls a rate limiter rejected locally: the wait for a send token would have passed the deadline.")
	m2.rateDelayed = counter("unherd.rate_limiter.delayed", "{attempt}", "Attempts a rate limiter made wait for a send token.")
	m2.rateCuts = counter("unherd.rate_limiter.cuts", "{cut}", "Throttling responses that cut a rate limiter's fill rate.")
	m2.refusals = counter("unherd.concurrency.refusals", "{request}",
		"Requests a concurrency limiter refused, at once or after waiting in its queue, by priority.")
	floatCounter := func(name, unit, desc string) metric.Float64ObservableCounter {
		c, err := m.Float64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	intGauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	intHistogram := func(h *histogramDesc) metric.Int64Histogram {
		i, err := m.Int64Histogram(h.name, metric.WithUnit(h.unit), metric.WithDescription(h.desc),
			metric.WithExplicitBucketBoundaries(h.bounds...))
		errs = append(errs, err)
		return i
	}
	floatHistogram := func(h *histogramDesc) metric.Float64Histogram {
		f, err := m.Float64Histogram(h.name, metric.WithUnit(h.unit), metric.WithDescription(h.desc),
			metric.WithExplicitBucketBoundaries(h.bounds...))
		errs = append(errs, err)
		return f
	}
	m2.queueTime = floatHistogram(&histogramDesc{"unherd.concurrency.queue.duration", "s",
		"Time requests spent in a concurrency limiter's queue, by priority and by whether they got a slot.", QueueBuckets})
	m2.limit = intGauge("unherd.concurrency.limit", "{request}", "A concurrency limiter's limit: how many requests it may have in flight at once.")
	m2.inFlight = intGauge("unherd.concurrency.in_flight", "{request}", "Requests a concurrency limiter has admitted and not yet released.")
	m2.retryDelay = floatCounter("unherd.retry.delay", "s", "Delays between the attempts of the calls a retry policy ended.")
	m2.rateDelay = floatCounter("unherd.rate_limiter.delay", "s", "Total of the waits for a send token a rate limiter imposed.")
	var err error
	m2.fillRate, err = m.Float64ObservableGauge("unherd.rate_limiter.fill_rate", metric.WithUnit("{token}/s"),
		metric.WithDescription("A rate limiter's fill rate at its latest cut, wait or rejection."))
	errs = append(errs, err)
	m2.callRetries = intHistogram(&callRetriesDesc)
	m2.callHedges = intHistogram(&callHedgesDesc)
	m2.callRetryDelay = floatHistogram(&callRetryDelayDesc)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if prod != nil {
		// Every collection of mp tells prod, which notices one that did
		// not collect it. The callback observes nothing.
		_, err := m.RegisterCallback(func(ctx context.Context, _ metric.Observer) error {
			prod.collected(ctx)
			return nil
		}, m2.attempts)
		if err != nil {
			return nil, err
		}
	}
	return &m2, nil
}

// Observer returns the observer for the policy named policy (attribute
// unherd.policy), recording the unherd.* instruments. It registers a
// callback with the meter that lives as long as the MeterProvider: make
// one observer per dependency and keep it, not one per call. Every
// attribute set is built here, so an event builds none.
func (m *Metrics) Observer(policy string) (observe.Observer, error) {
	o, err := m.observer(false, attribute.String(string(KeyPolicy), policy))
	if err != nil {
		return nil, err
	}
	return o, nil
}

// QueueBuckets are the bucket bounds, in seconds, of
// unherd.concurrency.queue.duration: from 1 ms, below a congested
// queue's 5 ms wait, to 2.5 s, a long limit.Config.MaxWait.
var QueueBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// RegisterLimiter reports the gauges of a concurrency limiter,
// unherd.concurrency.limit and unherd.concurrency.in_flight, with
// attribute unherd.policy: give it the name given to the Observer in the
// limiter's Config. A callback reads l.Limit() and l.InFlight() when
// the reader collects, so the gauges are current even though the
// LimitChanged events of concurrent releases may arrive out of order,
// and the limiter's hot path does nothing for them. The callback lives
// until the registration returned is unregistered, or as long as the
// MeterProvider.
func (m *Metrics) RegisterLimiter(policy string, l *limit.Limiter) (metric.Registration, error) {
	set := metric.WithAttributeSet(attribute.NewSet(KeyPolicy.String(policy)))
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(m.limit, int64(l.Limit()), set)
		o.ObserveInt64(m.inFlight, int64(l.InFlight()), set)
		return nil
	}, m.limit, m.inFlight)
}

// GRPCObserver returns an observer for the calls to one gRPC method on
// one target: it records the unherd.* instruments with attributes
// grpc.method and grpc.target and gRFC A96's per-call histograms, when a
// call ends, as A96 defines them: a call made through a retry policy
// that retried records grpc.client.call.retries (its retries) and
// grpc.client.call.retry_delay (the total of its waits between
// attempts); a hedged call (hedge.Do) that started hedges records
// grpc.client.call.hedges. A call without retries or hedges records
// none of them ("0 is not reported"), so a first-attempt success costs
// what it does with Observer. Inside a retry loop, each hedged attempt
// reports its own hedges. method is the full method name
// ("pkg.Service/Method"), target the channel's target URI, as gRFC A66
// defines them. The histograms go to the Producer given to New, or
// through the MeterProvider's instruments without one. Like Observer,
// make one per method and target and keep it.
func (m *Metrics) GRPCObserver(method, target string) (observe.Observer, error) {
	base := []attribute.KeyValue{attribute.String(string(KeyMethod), method), attribute.String(string(KeyTarget), target)}
	o, err := m.observer(true, base...)
	if err != nil {
		return nil, err
	}
	if m.prod != nil {
		o.agg = m.prod.agg(attribute.NewSet(base...))
	}
	return o, nil
}

const nstates = len(observe.BreakerStates)

// observer counts events in atomics; its callback reports them.
type observer struct {
	m    *Metrics
	grpc bool
	// rec is the gRPC histograms' one record option, the attribute set
	// grpc.method and grpc.target, made once: passed as rec..., it
	// costs Record no slice and no allocation.
	rec []metric.RecordOption
	// agg, if not nil, takes the gRPC histograms instead of the SDK's
	// instruments, until the Producer finds it is not collected.
	agg *grpcAgg

	attempts, hedges, denied, won, lost, throttled, success atomic.Int64
	delay                                                   atomic.Int64 // nanoseconds
	retries                                                 [len(classes)]atomic.Int64
	rateRejected, rateDelayed, rateCuts, rateDelay          atomic.Int64  // rateDelay in nanoseconds
	fillRate                                                atomic.Uint64 // math.Float64bits; 0 until an event sets it
	stops                                                   [observe.NumStops]atomic.Int64
	transitions                                             [nstates][nstates]atomic.Int64
	refusals                                                [npriorities]atomic.Int64

	// The attribute sets the callback reports each counter with.
	base, successSet, wonSet, lostSet metric.ObserveOption
	classSets                         [len(classes)]metric.ObserveOption
	stopSets                          [observe.NumStops]metric.ObserveOption
	transitionSets                    [nstates][nstates]metric.ObserveOption
	prioritySets                      [npriorities]metric.ObserveOption
	// The queue duration's record options, by priority, admitted or not.
	admittedRec, gaveUpRec [npriorities][]metric.RecordOption
}

const npriorities = len(observe.Priorities)

// aggregating reports whether the gRPC histograms go to agg, for the
// Producer, rather than to the SDK's instruments: there is an agg, and
// the Producer has not found that no reader collects it.
func (o *observer) aggregating() bool { return o.agg != nil && !o.m.prod.direct.Load() }

func (m *Metrics) observer(grpc bool, base ...attribute.KeyValue) (*observer, error) {
	set := func(kv ...attribute.KeyValue) attribute.Set {
		return attribute.NewSet(append(append([]attribute.KeyValue(nil), base...), kv...)...)
	}
	with := func(kv ...attribute.KeyValue) metric.MeasurementOption { return metric.WithAttributeSet(set(kv...)) }
	o := &observer{m: m, grpc: grpc, rec: []metric.RecordOption{with()}, base: with(),
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
	for i, p := range observe.Priorities {
		o.prioritySets[i] = with(KeyPriority.String(p))
		o.admittedRec[i] = []metric.RecordOption{with(KeyPriority.String(p), KeyQueueResult.String("admitted"))}
		o.gaveUpRec[i] = []metric.RecordOption{with(KeyPriority.String(p), KeyQueueResult.String("gave_up"))}
	}
	_, err := m.meter.RegisterCallback(o.report, m.attempts, m.retries, m.calls, m.hedges, m.denied, m.hedgeCalls,
		m.transitions, m.throttled, m.retryDelay, m.rateRejected, m.rateDelayed, m.rateCuts, m.rateDelay, m.fillRate,
		m.refusals)
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
	put(m.rateRejected, &o.rateRejected, o.base)
	put(m.rateDelayed, &o.rateDelayed, o.base)
	put(m.rateCuts, &o.rateCuts, o.base)
	if d := o.rateDelay.Load(); d != 0 {
		r.ObserveFloat64(m.rateDelay, float64(d)/1e9, o.base)
	}
	if bits := o.fillRate.Load(); bits != 0 {
		r.ObserveFloat64(m.fillRate, math.Float64frombits(bits), o.base)
	}
	for i := range o.refusals {
		put(m.refusals, &o.refusals[i], o.prioritySets[i])
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
		if o.grpc && e.Attempt > 1 {
			// gRFC A96: recorded when the call ends, and only for a call
			// that retried (for retries, "0 is not reported"; gRPC's
			// own implementation reports no retry_delay for a call
			// without retries either).
			if o.aggregating() {
				o.agg.recordCall(int64(e.Attempt-1), e.Delay)
			} else {
				o.m.callRetries.Record(ctx, int64(e.Attempt-1), o.rec...)
				o.m.callRetryDelay.Record(ctx, e.Delay.Seconds(), o.rec...)
			}
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
		if o.grpc && e.Attempt > 0 { // A96: 0 is not reported
			if o.aggregating() {
				o.agg.recordHedges(int64(e.Attempt))
			} else {
				o.m.callHedges.Record(ctx, int64(e.Attempt), o.rec...)
			}
		}
	case observe.BreakerTransition:
		from, to := observe.StateIndex(e.From), observe.StateIndex(e.To)
		if from >= 0 && to >= 0 {
			o.transitions[from][to].Add(1)
		}
	case observe.Throttled:
		o.throttled.Add(1)
	case observe.RateRejected:
		o.rateRejected.Add(1)
		o.fillRate.Store(math.Float64bits(e.Rate))
	case observe.RateDelayed:
		o.rateDelayed.Add(1)
		o.rateDelay.Add(int64(e.Delay))
		o.fillRate.Store(math.Float64bits(e.Rate))
	case observe.RateCut:
		o.rateCuts.Add(1)
		o.fillRate.Store(math.Float64bits(e.Rate))
	case observe.LimitRefused:
		if i := observe.PriorityIndex(e.Priority); i >= 0 {
			o.refusals[i].Add(1)
		}
	case observe.LimitWaited:
		i := observe.PriorityIndex(e.Priority)
		switch {
		case i < 0:
		case e.Err == nil:
			o.m.queueTime.Record(ctx, e.Delay.Seconds(), o.admittedRec[i]...)
		default:
			o.m.queueTime.Record(ctx, e.Delay.Seconds(), o.gaveUpRec[i]...)
		}
	}
}
