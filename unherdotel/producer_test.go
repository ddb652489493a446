package unherdotel_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/unherd/unherd/internal/observecheck"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdotel"
)

var a96 = []string{"grpc.client.call.retries", "grpc.client.call.hedges", "grpc.client.call.retry_delay"}

// withProducer returns Metrics given a Producer registered with the
// reader, as the package doc says.
func withProducer(t testing.TB) (*unherdotel.Metrics, *unherdotel.Producer, *sdkmetric.ManualReader) {
	t.Helper()
	p := unherdotel.NewProducer()
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := unherdotel.New(mp, p)
	if err != nil {
		t.Fatal(err)
	}
	return m, p, r
}

// a96Metrics collects r and returns A96's histograms, by name, failing
// if one appears twice (from the SDK's instruments and the producer).
func a96Metrics(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	all := collect(t, r)
	out := map[string]metricdata.Metrics{}
	for _, name := range a96 {
		if m, ok := all[name]; ok {
			out[name] = sortPoints(m)
		}
	}
	return out
}

// sortPoints orders m's histogram data points by attributes (the SDK
// reports them in no fixed order).
func sortPoints(m metricdata.Metrics) metricdata.Metrics {
	enc := attribute.DefaultEncoder()
	switch d := m.Data.(type) {
	case metricdata.Histogram[int64]:
		slices.SortFunc(d.DataPoints, func(a, b metricdata.HistogramDataPoint[int64]) int {
			return strings.Compare(a.Attributes.Encoded(enc), b.Attributes.Encoded(enc))
		})
	case metricdata.Histogram[float64]:
		slices.SortFunc(d.DataPoints, func(a, b metricdata.HistogramDataPoint[float64]) int {
			return strings.Compare(a.Attributes.Encoded(enc), b.Attributes.Encoded(enc))
		})
	}
	return m
}

// callEnds are the events of n calls drawn from rng: successes and
// give-ups after 1 to 9 attempts, with delays from 0 to past the last
// bound and exactly on bounds, and hedged calls with 0 to 8 hedges.
func callEnds(rng *rand.Rand, n int) []observe.Event {
	bounds := []float64{0, 0.00001, 0.0003, 0.001, 0.01, 0.013, 0.1, 0.65, 1, 2, 5, 100}
	var evs []observe.Event
	for range n {
		attempt := 1 + rng.IntN(9)
		var delay time.Duration
		switch rng.IntN(4) {
		case 0: // on a bound, or a nanosecond either side
			delay = time.Duration(bounds[rng.IntN(len(bounds))]*1e9) + time.Duration(rng.IntN(3)-1)
			delay = max(delay, 0)
		case 1:
			delay = time.Duration(rng.Int64N(int64(200 * time.Second)))
		default:
			delay = time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
		}
		switch rng.IntN(4) {
		case 0:
			evs = append(evs, observe.Event{Kind: observe.Success, Attempt: attempt, Delay: delay})
		case 1:
			evs = append(evs, observe.Event{Kind: observe.GiveUp, Attempt: attempt, Delay: delay, Stop: observe.StopAttemptsExhausted})
		case 2:
			evs = append(evs, observe.Event{Kind: observe.HedgeWon, Attempt: rng.IntN(9)})
		default:
			evs = append(evs, observe.Event{Kind: observe.HedgeLost, Attempt: rng.IntN(9)})
		}
	}
	return evs
}

// TestProducerMatchesSDK: for the same calls, the Producer reports what
// the SDK's histogram instruments do (names, units, descriptions,
// temporality, attributes, counts, buckets, minimums, maximums, sums),
// over two collections (cumulative) and on two readers, for two
// observers and several seeds. The delay sums agree within 1e-12
// relative (the SDK adds float seconds; the Producer adds nanoseconds);
// times and exemplars are not compared.
func TestProducerMatchesSDK(t *testing.T) {
	for seed := range uint64(5) {
		sdkM, sdkR := setupSDK(t)
		p := unherdotel.NewProducer()
		r1 := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
		r2 := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r1), sdkmetric.WithReader(r2))
		t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		prodM, err := unherdotel.New(mp, p)
		if err != nil {
			t.Fatal(err)
		}
		type pair struct{ sdk, prod observe.Observer }
		var obs []pair
		for _, method := range []string{"s.S/A", "s.S/B", "s.S/A"} { // two observers share s.S/A's series
			obs = append(obs, pair{must(sdkM.GRPCObserver(method, "dns:///s:443")),
				must(prodM.GRPCObserver(method, "dns:///s:443"))})
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		ctx := context.Background()
		for round := range 2 {
			for _, e := range callEnds(rng, 300) {
				o := obs[rng.IntN(len(obs))]
				o.sdk.Observe(ctx, e)
				o.prod.Observe(ctx, e)
			}
			if round == 0 { // a retried call through retry.Do, both paths
				for _, o := range obs {
					retried(t, o.sdk, 1)
					retried(t, o.prod, 1)
				}
			}
			want := a96Metrics(t, sdkR)
			for _, r := range []*sdkmetric.ManualReader{r1, r2} {
				got := a96Metrics(t, r)
				for _, name := range a96 {
					w, g := want[name], got[name]
					if len(w.Name) == 0 {
						t.Fatalf("seed %d: the SDK reported no %s", seed, name)
					}
					equateDelaySums(t, &w, g)
					metricdatatest.AssertEqual(t, w, g, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
				}
			}
		}
	}
}

// equateDelaySums replaces the sums of want's float data points by
// got's, after checking they agree within 1e-12 relative.
func equateDelaySums(t *testing.T, want *metricdata.Metrics, got metricdata.Metrics) {
	t.Helper()
	w, ok := want.Data.(metricdata.Histogram[float64])
	if !ok {
		return
	}
	g, ok := got.Data.(metricdata.Histogram[float64])
	if !ok || len(g.DataPoints) != len(w.DataPoints) {
		return // AssertEqual reports it
	}
	pts := append([]metricdata.HistogramDataPoint[float64](nil), w.DataPoints...)
	for i := range pts {
		ws, gs := pts[i].Sum, g.DataPoints[i].Sum
		if math.Abs(ws-gs) > 1e-12*math.Abs(ws) {
			t.Errorf("%s: sum %v, the SDK's %v", want.Name, gs, ws)
		}
		pts[i].Sum = gs
	}
	w.DataPoints = pts
	want.Data = w
}

// TestProducerNothing: before any call that retried or hedged, and
// after only first-attempt successes, the Producer reports nothing, and
// the SDK's own instruments report no A96 histogram either.
func TestProducerNothing(t *testing.T) {
	m, p, r := withProducer(t)
	if sm, err := p.Produce(context.Background()); err != nil || sm != nil {
		t.Fatalf("Produce = %v, %v with no observer", sm, err)
	}
	o := must(m.GRPCObserver("s.S/M", "t"))
	pol, err := retry.New(retry.Config{Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := pol.Do(context.Background(), func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := a96Metrics(t, r); len(got) != 0 {
		t.Errorf("reported %v", got)
	}
	if sm, err := p.Produce(context.Background()); err != nil || sm != nil {
		t.Errorf("Produce = %v, %v after first-attempt successes", sm, err)
	}
}

// TestProducerConcurrent: calls recorded from several goroutines while
// another collects. Every collection is a consistent snapshot (each
// call's retries and delay in both histograms or in neither: equal
// counts, sums of exactly 2 retries and 1 ms per call), counts never
// go down, and the last collection has every call.
func TestProducerConcurrent(t *testing.T) {
	m, _, r := withProducer(t)
	o := must(m.GRPCObserver("s.S/M", "t"))
	const workers, calls = 4, 20000
	ctx := context.Background()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range calls {
				o.Observe(ctx, observe.Event{Kind: observe.Success, Attempt: 3, Delay: time.Millisecond})
				o.Observe(ctx, observe.Event{Kind: observe.HedgeWon, Attempt: 1})
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var last uint64
	check := func() uint64 {
		got := a96Metrics(t, r)
		if _, ok := got["grpc.client.call.retries"]; !ok { // only hedges so far, or nothing
			if _, ok := got["grpc.client.call.retry_delay"]; ok || last != 0 {
				t.Errorf("retry_delay without retries, or retries gone: %v", got)
			}
			return 0
		}
		rp := got["grpc.client.call.retries"].Data.(metricdata.Histogram[int64]).DataPoints[0]
		dp := got["grpc.client.call.retry_delay"].Data.(metricdata.Histogram[float64]).DataPoints[0]
		var buckets uint64
		for _, n := range rp.BucketCounts {
			buckets += n
		}
		if rp.Count != dp.Count || buckets != rp.Count || rp.Sum != 2*int64(rp.Count) ||
			math.Abs(dp.Sum-float64(dp.Count)*1e-3) > 1e-9 {
			t.Errorf("torn snapshot: retries count %d (buckets %d) sum %d; delay count %d sum %v",
				rp.Count, buckets, rp.Sum, dp.Count, dp.Sum)
		}
		if rp.Count < last {
			t.Errorf("count went down from %d to %d", last, rp.Count)
		}
		last = rp.Count
		return rp.Count
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			check()
		}
	}
	if n := check(); n != workers*calls {
		t.Errorf("final count %d, want %d", n, workers*calls)
	}
	h := a96Metrics(t, r)["grpc.client.call.hedges"].Data.(metricdata.Histogram[int64]).DataPoints[0]
	if h.Count != workers*calls || h.Sum != workers*calls {
		t.Errorf("hedges: count %d sum %d, want %d", h.Count, h.Sum, workers*calls)
	}
}

// TestProducerNoAllocation: recording through a Producer allocates
// nothing, per event and per call that retried twice.
func TestProducerNoAllocation(t *testing.T) {
	m, p, _ := withProducer(t)
	o := must(m.GRPCObserver("s.S/M", "t"))
	observecheck.NoAllocation(t, "producer", o)
	ctx := context.Background()
	if allocs := callAllocs(t, o); allocs != 0 {
		t.Errorf("a call with 2 retries allocates %v times", allocs)
	}
	sm, _ := p.Produce(ctx)
	if len(sm) != 1 || len(sm[0].Metrics) != 3 {
		t.Fatalf("Produce = %+v, want the three histograms", sm)
	}
	// events has one Success after 2 attempts; each retry.Do call adds one.
	if c := sm[0].Metrics[0].Data.(metricdata.Histogram[int64]).DataPoints[0].Count; c < 100 {
		t.Errorf("grpc.client.call.retries count %d: the calls were not recorded", c)
	}
}

// otelErrors collects what the OpenTelemetry error handler receives: the
// tests install the handler once (the global handler delegates to the
// first one set) and read it with takeOTelErrors.
var otelErrors struct {
	once sync.Once
	mu   sync.Mutex
	errs []error
}

// takeOTelErrors installs the handler if need be and returns, and
// forgets, the errors it has received.
func takeOTelErrors() []error {
	otelErrors.once.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			otelErrors.mu.Lock()
			defer otelErrors.mu.Unlock()
			otelErrors.errs = append(otelErrors.errs, err)
		}))
	})
	otelErrors.mu.Lock()
	defer otelErrors.mu.Unlock()
	errs := otelErrors.errs
	otelErrors.errs = nil
	return errs
}

// TestProducerNotRegistered: a Producer given to New but registered with
// no reader. Collections before a second after the first, or before the
// first's deadline if later, report nothing; the next one reports
// ErrProducerNotRegistered, once, to the OpenTelemetry error handler,
// and from then on the observer records through the SDK's instruments:
// the reader sees the calls that ended after it (not those before), and
// the Producer reports nothing. A registered Producer collected at the
// same times reports no error and every call.
func TestProducerNotRegistered(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline time.Duration // of the first collection's context, 0 for none
		due      time.Duration // after the first collection: the switch
	}{{"no deadline", 0, time.Second}, {"deadline", 10 * time.Second, 10 * time.Second}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testNotRegistered(t, c.deadline, c.due) })
		})
	}
}

func testNotRegistered(t *testing.T, deadline, due time.Duration) {
	takeOTelErrors()
	p := unherdotel.NewProducer()
	r := sdkmetric.NewManualReader() // without p
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	m, err := unherdotel.New(mp, p)
	if err != nil {
		t.Fatal(err)
	}
	o := must(m.GRPCObserver("s.S/M", "t"))
	regM, _, regR := withProducer(t)
	regO := must(regM.GRPCObserver("s.S/M", "t"))

	retries := func(r *sdkmetric.ManualReader) uint64 {
		got, ok := a96Metrics(t, r)["grpc.client.call.retries"]
		if !ok {
			return 0
		}
		return got.Data.(metricdata.Histogram[int64]).DataPoints[0].Count
	}
	var start time.Time
	for i, c := range []struct {
		at               time.Duration // after the first collection
		errs             int           // ErrProducerNotRegistered reported by it
		retries, regRetr uint64        // calls in grpc.client.call.retries, unregistered and registered
	}{
		{0, 0, 0, 1},
		{due - time.Millisecond, 0, 0, 2},
		{due, 1, 0, 3}, // the switch
		{due + time.Second, 0, 1, 4},
		{due + time.Minute, 0, 2, 5},
	} {
		retriedCtx(t, context.Background(), o) // 30 ms of delays
		retriedCtx(t, context.Background(), regO)
		ctx := context.Background()
		if i == 0 {
			start = time.Now()
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
		}
		time.Sleep(time.Until(start.Add(c.at)))
		var rm metricdata.ResourceMetrics
		if err := r.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		errs := takeOTelErrors()
		if len(errs) != c.errs {
			t.Errorf("collection %d: errors %v, want %d", i, errs, c.errs)
		}
		for _, err := range errs {
			if !errors.Is(err, unherdotel.ErrProducerNotRegistered) {
				t.Errorf("collection %d: error %v", i, err)
			}
		}
		if n := retries(r); n != c.retries {
			t.Errorf("collection %d: unregistered: %d calls in grpc.client.call.retries, want %d", i, n, c.retries)
		}
		if n := retries(regR); n != c.regRetr {
			t.Errorf("collection %d: registered: %d calls in grpc.client.call.retries, want %d", i, n, c.regRetr)
		}
		if errs := takeOTelErrors(); len(errs) != 0 {
			t.Errorf("collection %d: the registered Producer reported %v", i, errs)
		}
	}
	if sm, err := p.Produce(context.Background()); err != nil || sm != nil {
		t.Errorf("Produce = %v, %v after the switch", sm, err)
	}
}
