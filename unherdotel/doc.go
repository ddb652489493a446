// Package unherdotel records unherd's observe events as OpenTelemetry
// metrics, including gRPC's per-call retry metrics of gRFC A96.
//
// Create the instruments once from a MeterProvider, then give each
// dependency's policies an observer:
//
//	m, err := unherdotel.New(otel.GetMeterProvider())
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
// [SpanEvents] adds the same events to the span in the call's context
// (span events "unherd.retry", "unherd.give_up", ...), so a trace shows
// each attempt, its delay and why the call stopped; give a policy both
// with observe.Multi.
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
// # The gRPC histograms: SDK instruments or a Producer
//
// By default the gRPC histograms are the MeterProvider's synchronous
// histogram instruments, and each record goes through the SDK: an
// attribute-set lookup, the bucket search, the exemplar filter. A call
// that retried records two, a hedged call one, and a call that did
// neither, almost every call, none. That costs several times what the
// counters do, and only on calls that already paid for a failed attempt
// and a wait, so it is the default: it works with any MeterProvider
// (the global one included) and needs no wiring, the MeterProvider's
// views and the reader's temporality apply, and a call recorded in a
// sampled span leaves an exemplar that links the histogram to its trace.
//
// A service that retries or hedges many calls per second can move that
// cost off the call: a [Producer] given in GRPCConfig aggregates the
// histograms in the observer (a few atomic adds per call that retried
// or hedged, no lock, no allocation) and hands them to the SDK when a
// reader collects, through the SDK's external-producer hook. Register
// it with each reader; a reader without it does not see the histograms:
//
//	prod := unherdotel.NewProducer()
//	reader := sdkmetric.NewPeriodicReader(exporter, sdkmetric.WithProducer(prod))
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
//	m, err := unherdotel.New(mp)
//	obs, err := m.GRPCObserverWith(unherdotel.GRPCConfig{
//		Method: "payments.Payments/Charge", Target: "dns:///payments:443", Producer: prod})
//
// The data are the same (names, units, buckets, attributes, counts,
// sums, minimums and maximums), but always cumulative, without
// exemplars, and outside the MeterProvider's views.
package unherdotel
