// Package unherdotel records unherd's observe events as OpenTelemetry
// metrics, including gRPC's per-call retry metrics of gRFC A96.
//
// Create a Producer, register it with the MeterProvider's readers,
// create the instruments once from that MeterProvider and the Producer,
// then give each dependency's policies an observer:
//
//	prod := unherdotel.NewProducer()
//	reader := sdkmetric.NewPeriodicReader(exporter, sdkmetric.WithProducer(prod))
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
//	m, err := unherdotel.New(mp, prod)
//	obs, err := m.Observer("payments")
//	p, err := retry.New(retry.Config{Observer: obs})
//
// For a gRPC client, use one observer per method and target: besides the
// unherd.* counters it records, when a call ends, gRFC A96's
// grpc.client.call.retries (retries in the call, 0 not reported),
// grpc.client.call.hedges (hedges in the call, 0 not reported) and
// grpc.client.call.retry_delay (seconds waited between attempts, for a
// call that retried), each with grpc.method and grpc.target
// (https://github.com/grpc/proposal/blob/master/A96-retry-otel-stats.md):
//
//	obs, err := m.GRPCObserver("payments.Payments/Charge", "dns:///payments:443")
//
// A concurrency limiter (package limit) given an observer reports its
// refusals, by priority, and the time requests spend in its queue;
// [Metrics.RegisterLimiter] adds its limit and in-flight gauges, read
// when the reader collects:
//
//	l, err := limit.New(limit.Config{Observer: obs})
//	reg, err := m.RegisterLimiter("payments", l)
//
// [SpanEvents] adds the same events to the span in the call's context
// (span events "unherd.retry", "unherd.give_up", ...), so a trace shows
// each attempt, its delay and why the call stopped; give a policy both
// with observe.Multi.
//
// [HTTPAttempts], as the base of an unherdhttp.Transport, makes each
// request the Transport sends (first attempt, retry or hedge) an HTTP
// client span of its own, with the HTTP semantic conventions' attributes
// and http.request.resend_count on every resend, as the conventions ask:
//
//	tr, err := unherdhttp.NewTransport(unherdotel.HTTPAttempts(base, tp), unherdhttp.Config{})
//
// The instrument names follow OpenTelemetry's naming rules (lower case,
// dotted namespaces, units in UCUM). No semantic convention defines
// metrics for retries, hedges, circuit breakers or throttling in general,
// so those are named under "unherd."; the full list is on [New].
//
// The unherd.* counters are asynchronous instruments: an event is one
// atomic add on a counter the observer holds, and the observer's callback
// reports the totals when the reader collects, so an event costs about
// what a Prometheus counter does. Every attribute set and record option
// is built when the observer is made; nothing is allocated per event.
//
// # The gRPC histograms: a Producer or the SDK's instruments
//
// OpenTelemetry has no asynchronous histogram, so A96's histograms reach
// the reader another way: the gRPC observers aggregate them themselves
// (a few atomic adds per call that retried or hedged, no lock, no
// allocation), and the Producer hands them to each reader when it
// collects, through the SDK's external-producer hook. That is why New
// takes the Producer and each reader must be made with it. A reader
// made without it would not see the histograms, so the Producer watches
// for that: if the MeterProvider collects and no reader collects the
// Producer, it reports ErrProducerNotRegistered to the OpenTelemetry
// error handler (logged by default) and the observers record the
// histograms through the MeterProvider's instruments from then on. The
// calls that ended before that collection are missing from them. A
// reader without the Producer goes unnoticed if another reader of the
// same MeterProvider has it, and so does a MeterProvider that collects
// only once (at shutdown): register it with every reader.
//
// The data are those of the SDK's histogram instruments (names, units,
// buckets, attributes, counts, sums, minimums and maximums), but always
// cumulative, without exemplars, and outside the MeterProvider's views.
// For those, or for a MeterProvider whose readers cannot take a
// producer, pass a nil Producer to New: the histograms are then the
// MeterProvider's synchronous histogram instruments, and each record
// goes through the SDK (an attribute-set lookup, the bucket search, the
// exemplar filter), several times what the counters cost, on every call
// that retried or hedged. A call recorded in a sampled span then leaves
// an exemplar that links the histogram to its trace.
package unherdotel
