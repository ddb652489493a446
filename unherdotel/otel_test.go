package unherdotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/internal/observecheck"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdotel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = observecheck.ErrDown

// setup returns Metrics made as the package doc says, with a Producer
// registered with the reader and given to New.
func setup(t testing.TB) (*unherdotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	m, _, r := withProducer(t)
	return m, r
}

// setupSDK returns Metrics made with a nil Producer: gRFC A96's
// histograms go through the SDK's histogram instruments.
func setupSDK(t testing.TB) (*unherdotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := unherdotel.New(mp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, r
}

// setups are the two ways to record gRFC A96's histograms: a Producer
// (the default the package doc gives) and the SDK's instruments.
var setups = []struct {
	name  string
	setup func(testing.TB) (*unherdotel.Metrics, *sdkmetric.ManualReader)
}{{"producer", setup}, {"sdk", setupSDK}}

// eachSetup runs test as a subtest for each of setups.
func eachSetup(t *testing.T, test func(*testing.T, func(testing.TB) (*unherdotel.Metrics, *sdkmetric.ManualReader))) {
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) { test(t, s.setup) })
	}
}

// collect returns the data points of every instrument, by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != unherdotel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			if _, dup := out[m.Name]; dup {
				t.Errorf("%s reported twice", m.Name)
			}
			out[m.Name] = m
		}
	}
	return out
}

// sum returns the counter's (or gauge's) value for the data points with attribute kv
// (any point if kv is empty).
func sum(t *testing.T, m metricdata.Metrics, kv ...attribute.KeyValue) float64 {
	t.Helper()
	match := func(s attribute.Set) bool {
		for _, a := range kv {
			if v, ok := s.Value(a.Key); !ok || v != a.Value {
				return false
			}
		}
		return true
	}
	var total float64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += float64(p.Value)
			}
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += p.Value
			}
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += p.Value
			}
		}
	default:
		t.Fatalf("%s is a %T, not a sum or a gauge", m.Name, m.Data)
	}
	return total
}

func retried(t *testing.T, o observe.Observer, calls int) {
	t.Helper()
	for range calls {
		retriedCtx(t, context.Background(), o)
	}
}

// retriedCtx makes one call with ctx that fails twice, then succeeds,
// with delays of 10 and 20 ms.
func retriedCtx(t *testing.T, ctx context.Context, o observe.Observer) {
	t.Helper()
	observecheck.RetriedTwice(t, ctx, o, 10*time.Millisecond)
}

func TestCounters(t *testing.T) {
	m, r := setup(t)
	o := must(m.Observer("payments"))
	retried(t, o, 2) // 6 attempts, 4 retries, delays 10+20 ms per call
	ctx := context.Background()
	o.Observe(ctx, observe.Event{Kind: observe.GiveUp, Attempt: 1, Reason: retry.ErrBudgetExhausted, Stop: observe.StopBudgetExhausted})
	o.Observe(ctx, observe.Event{Kind: observe.HedgeStarted, Attempt: 1})
	o.Observe(ctx, observe.Event{Kind: observe.HedgeWon, Attempt: 1})
	o.Observe(ctx, observe.Event{Kind: observe.BreakerTransition, From: "closed", To: "open"})
	o.Observe(ctx, observe.Event{Kind: observe.Throttled, Probability: 0.5})
	o.Observe(ctx, observe.Event{Kind: observe.RateCut, Rate: 0.5})
	o.Observe(ctx, observe.Event{Kind: observe.RateDelayed, Delay: 2 * time.Second, Rate: 0.5})
	o.Observe(ctx, observe.Event{Kind: observe.RateRejected, Delay: 625 * time.Millisecond, Rate: 1.6})
	got := collect(t, r)
	policy := unherdotel.KeyPolicy.String("payments")
	for _, c := range []struct {
		name string
		kv   []attribute.KeyValue
		want float64
	}{
		{"unherd.retry.attempts", []attribute.KeyValue{policy}, 6},
		{"unherd.retry.retries", []attribute.KeyValue{policy, unherdotel.KeyClass.String("transient")}, 4},
		{"unherd.retry.delay", []attribute.KeyValue{policy}, 0.06},
		{"unherd.retry.calls", []attribute.KeyValue{unherdotel.KeyOutcome.String("success")}, 2},
		{"unherd.retry.calls", []attribute.KeyValue{unherdotel.KeyOutcome.String("budget_exhausted")}, 1},
		{"unherd.hedge.started", nil, 1},
		{"unherd.hedge.calls", []attribute.KeyValue{unherdotel.KeyResult.String("won")}, 1},
		{"unherd.breaker.transitions", []attribute.KeyValue{unherdotel.KeyFrom.String("closed"), unherdotel.KeyTo.String("open")}, 1},
		{"unherd.throttle.rejections", nil, 1},
		{"unherd.rate_limiter.cuts", []attribute.KeyValue{policy}, 1},
		{"unherd.rate_limiter.delayed", nil, 1},
		{"unherd.rate_limiter.delay", nil, 2},
		{"unherd.rate_limiter.rejections", nil, 1},
		{"unherd.rate_limiter.fill_rate", []attribute.KeyValue{policy}, 1.6},
	} {
		if v := sum(t, got[c.name], c.kv...); v < c.want-1e-9 || v > c.want+1e-9 {
			t.Errorf("%s%v = %v, want %v", c.name, c.kv, v, c.want)
		}
		if u := got[c.name].Unit; u == "" {
			t.Errorf("%s has no unit", c.name)
		}
	}
	if _, ok := got["grpc.client.call.retries"]; ok {
		t.Error("a plain observer recorded gRPC's per-call metrics")
	}
}

// TestGRPC: gRFC A96's per-call histograms, with grpc.method and
// grpc.target; calls without retries or hedges report no 0; through a
// Producer and through the SDK's instruments.
func TestGRPC(t *testing.T) {
	eachSetup(t, testGRPC)
}

func testGRPC(t *testing.T, setup func(testing.TB) (*unherdotel.Metrics, *sdkmetric.ManualReader)) {
	m, r := setup(t)
	o := must(m.GRPCObserver("helloworld.Greeter/SayHello", "dns:///greeter:50051"))
	retried(t, o, 3) // 2 retries each, 10+20 ms of delay
	ctx := context.Background()
	o.Observe(ctx, observe.Event{Kind: observe.Success, Attempt: 1}) // no retries: nothing
	o.Observe(ctx, observe.Event{Kind: observe.GiveUp, Attempt: 1, Stop: observe.StopPermanent})
	o.Observe(ctx, observe.Event{Kind: observe.GiveUp, Attempt: 3, Delay: time.Second, Stop: observe.StopAttemptsExhausted})
	o.Observe(ctx, observe.Event{Kind: observe.HedgeLost, Attempt: 2})
	got := collect(t, r)
	for _, c := range []struct {
		name  string
		unit  string
		count uint64
		sum   float64
	}{
		{"grpc.client.call.retries", "{retry}", 4, 8},
		{"grpc.client.call.hedges", "{hedge}", 1, 2},
		{"grpc.client.call.retry_delay", "s", 4, 1.09},
	} {
		g := got[c.name]
		if g.Unit != c.unit {
			t.Errorf("%s unit %q, want %q", c.name, g.Unit, c.unit)
		}
		var count uint64
		var s float64
		var attrs attribute.Set
		switch d := g.Data.(type) {
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				count, s, attrs = count+p.Count, s+float64(p.Sum), p.Attributes
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				count, s, attrs = count+p.Count, s+p.Sum, p.Attributes
			}
		default:
			t.Fatalf("%s is a %T, not a histogram", c.name, g.Data)
		}
		if count != c.count || s < c.sum-1e-9 || s > c.sum+1e-9 {
			t.Errorf("%s: %d records summing to %v, want %d summing to %v", c.name, count, s, c.count, c.sum)
		}
		if v, _ := attrs.Value(unherdotel.KeyMethod); v.AsString() != "helloworld.Greeter/SayHello" {
			t.Errorf("%s: grpc.method %q", c.name, v.AsString())
		}
		if v, _ := attrs.Value(unherdotel.KeyTarget); v.AsString() != "dns:///greeter:50051" {
			t.Errorf("%s: grpc.target %q", c.name, v.AsString())
		}
	}
}

// TestGRPCFirstAttempt: calls that neither retried nor hedged (a
// first-attempt success, a permanent failure, a local rejection before
// any attempt) record none of A96's histograms, not even a zero delay,
// through a Producer or the SDK's instruments.
func TestGRPCFirstAttempt(t *testing.T) {
	eachSetup(t, testGRPCFirstAttempt)
}

func testGRPCFirstAttempt(t *testing.T, setup func(testing.TB) (*unherdotel.Metrics, *sdkmetric.ManualReader)) {
	m, r := setup(t)
	o := must(m.GRPCObserver("s.S/M", "dns:///s:443"))
	p, err := retry.New(retry.Config{Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Do(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	_ = p.Do(ctx, func(context.Context) error { return retry.MarkPermanent(errDown) })
	o.Observe(ctx, observe.Event{Kind: observe.GiveUp, Attempt: 0, Stop: observe.StopRejected})
	got := collect(t, r)
	for _, name := range []string{"grpc.client.call.retries", "grpc.client.call.hedges", "grpc.client.call.retry_delay"} {
		if g, ok := got[name]; ok {
			t.Errorf("%s recorded: %+v", name, g.Data)
		}
	}
	if n := sum(t, got["unherd.retry.calls"]); n != 3 {
		t.Errorf("unherd.retry.calls = %v, want 3", n)
	}
}

// TestNoAllocation: no event allocates, through a plain observer and a
// gRPC one with a Producer or the SDK's instruments.
func TestNoAllocation(t *testing.T) {
	for _, s := range setups {
		m, _ := s.setup(t)
		for _, o := range []observe.Observer{must(m.Observer("x")), must(m.GRPCObserver("s/M", "t"))} {
			observecheck.NoAllocation(t, s.name, o)
		}
	}
}

// TestNoAllocationPerCall: a whole call that retries twice allocates
// nothing, with the gRPC observer (five events, two histogram records,
// through a Producer or the SDK's instruments) as without one.
func TestNoAllocationPerCall(t *testing.T) {
	for _, s := range setups {
		m, _ := s.setup(t)
		o := must(m.GRPCObserver("s.S/M", "t"))
		for _, obs := range []observe.Observer{nil, o} {
			if allocs := callAllocs(t, obs); allocs != 0 {
				t.Errorf("%s: observer %v: a call with 2 retries allocates %v times", s.name, obs != nil, allocs)
			}
		}
	}
}

// callAllocs returns the allocations of a retry.Do call that fails twice
// and then succeeds, reported to obs, after one such call (the first
// record of a data point may allocate it).
func callAllocs(t *testing.T, obs observe.Observer) float64 {
	t.Helper()
	p, err := retry.New(retry.Config{Observer: obs, Budget: budget.Unlimited, Backoff: backoff.Schedule{Immediate: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	op := func(context.Context) error {
		if n++; n%3 != 0 {
			return errDown
		}
		return nil
	}
	_ = p.Do(ctx, op)
	return testing.AllocsPerRun(100, func() {
		if err := p.Do(ctx, op); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkEvent is one event of each kind through the OpenTelemetry
// observers (SDK with a manual reader): plain, gRPC with a Producer (the
// package doc's setup) and gRPC through the SDK's histogram instruments
// (grpc-sdk, New with a nil Producer).
func BenchmarkEvent(b *testing.B) {
	m, _ := setup(b)
	sdkM, _ := setupSDK(b)
	for _, o := range []struct {
		name string
		obs  observe.Observer
	}{{"plain", must(m.Observer("x"))}, {"grpc", must(m.GRPCObserver("s/M", "t"))},
		{"grpc-sdk", must(sdkM.GRPCObserver("s/M", "t"))}} {
		observecheck.BenchmarkEvents(b, o.name+"/", o.obs)
	}
}

// must returns o, and panics if err is set: registering a callback with
// a working MeterProvider does not fail.
func must(o observe.Observer, err error) observe.Observer {
	if err != nil {
		panic(err)
	}
	return o
}

// BenchmarkCalls is observecheck.BenchmarkCalls with the OpenTelemetry
// observers (SDK with a manual reader, default exemplar filter): plain,
// gRPC with a Producer (the package doc's setup) and gRPC through the
// SDK's histogram instruments (grpc-sdk).
func BenchmarkCalls(b *testing.B) {
	m, _ := setup(b)
	sdkM, _ := setupSDK(b)
	b.Run("plain", func(b *testing.B) { observecheck.BenchmarkCalls(b, "otel", must(m.Observer("bench"))) })
	b.Run("grpc", func(b *testing.B) {
		observecheck.BenchmarkCalls(b, "otel", must(m.GRPCObserver("s.S/M", "dns:///s:443")))
	})
	b.Run("grpc-sdk", func(b *testing.B) {
		observecheck.BenchmarkCalls(b, "otel", must(sdkM.GRPCObserver("s.S/M", "dns:///s:443")))
	})
}

// BenchmarkCallEndParallel is the end of a call that retried (2 retries,
// 1 ms of delay) from every P at once into one gRPC observer's
// histograms: through a Producer (grpc) and the SDK's instruments
// (grpc-sdk).
func BenchmarkCallEndParallel(b *testing.B) {
	m, _ := setup(b)
	sdkM, _ := setupSDK(b)
	e := observe.Event{Kind: observe.Success, Attempt: 3, Delay: time.Millisecond}
	for _, o := range []struct {
		name string
		obs  observe.Observer
	}{{"grpc", must(m.GRPCObserver("s/M", "t"))}, {"grpc-sdk", must(sdkM.GRPCObserver("s/M", "t"))}} {
		b.Run(o.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					o.obs.Observe(ctx, e)
				}
			})
		})
	}
}

// BenchmarkCallEvents is the observers' part of BenchmarkCalls without
// the calls: the events of one call of each kind, replayed into the
// observer (plain, gRPC with a Producer, gRPC through the SDK's
// instruments). It reports ns/event, the per-event cost BenchmarkCalls
// measures as a difference, without the noise of the calls themselves
// (the hedged call's allocations most of all).
func BenchmarkCallEvents(b *testing.B) {
	m, _ := setup(b)
	sdkM, _ := setupSDK(b)
	calls := observecheck.CallEvents(b)
	ctx := context.Background()
	for _, call := range []string{"success", "retry2", "hedged"} {
		evs := calls[call]
		for _, o := range []struct {
			name string
			obs  observe.Observer
		}{{"plain", must(m.Observer("bench"))}, {"grpc", must(m.GRPCObserver("s.S/M", "dns:///s:443"))},
			{"grpc-sdk", must(sdkM.GRPCObserver("s.S/M", "dns:///s:443"))}} {
			b.Run("call="+call+"/obs="+o.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, e := range evs {
						o.obs.Observe(ctx, e)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
			})
		}
	}
}
