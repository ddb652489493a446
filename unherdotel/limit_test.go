package unherdotel_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/unherd/unherd/internal/observecheck"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/unherdotel"
)

// histogramPoint returns the point of the float histogram m whose
// attributes include kv, or fails.
func histogramPoint(t *testing.T, m metricdata.Metrics, kv ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, not a float histogram", m.Name, m.Data)
	}
	for _, p := range h.DataPoints {
		match := true
		for _, a := range kv {
			if v, ok := p.Attributes.Value(a.Key); !ok || v != a.Value {
				match = false
			}
		}
		if match {
			return p
		}
	}
	t.Fatalf("%s has no point with %v", m.Name, kv)
	return metricdata.HistogramDataPoint[float64]{}
}

// TestLimiter drives a limiter of 2, observed as "api", through
// refusals, a wait that gets a slot and one that times out, and reads
// each of its instruments.
func TestLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := setup(t)
		l, err := limit.New(limit.Config{Algorithm: limit.Fixed(2), MaxWait: 50 * time.Millisecond, MaxWaiters: 1,
			Observer: must(m.Observer("api"))})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := m.RegisterLimiter("api", l)
		if err != nil {
			t.Fatal(err)
		}
		b, c := observecheck.LimiterOf2(t, l)
		policy := unherdotel.KeyPolicy.String("api")
		ms := collect(t, r)
		for _, c := range []struct {
			name string
			kv   []attribute.KeyValue
			want float64
		}{
			{"unherd.concurrency.refusals", []attribute.KeyValue{policy, unherdotel.KeyPriority.String("sheddable")}, 1},
			{"unherd.concurrency.refusals", []attribute.KeyValue{policy, unherdotel.KeyPriority.String("normal")}, 2},
			{"unherd.concurrency.refusals", []attribute.KeyValue{unherdotel.KeyPriority.String("critical")}, 0},
		} {
			if v := sum(t, ms[c.name], c.kv...); v != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.kv, v, c.want)
			}
		}
		for _, c := range []struct {
			kv    []attribute.KeyValue
			count uint64
			sum   float64
		}{
			{[]attribute.KeyValue{policy, unherdotel.KeyPriority.String("critical"), unherdotel.KeyQueueResult.String("admitted")}, 1, 0.02},
			{[]attribute.KeyValue{policy, unherdotel.KeyPriority.String("normal"), unherdotel.KeyQueueResult.String("gave_up")}, 1, 0.05},
		} {
			p := histogramPoint(t, ms["unherd.concurrency.queue.duration"], c.kv...)
			if p.Count != c.count || p.Sum < c.sum-1e-9 || p.Sum > c.sum+1e-9 {
				t.Errorf("queue duration %v: count %d, sum %v; want %d, %v", c.kv, p.Count, p.Sum, c.count, c.sum)
			}
		}
		if u := ms["unherd.concurrency.queue.duration"].Unit; u != "s" {
			t.Errorf("queue duration unit %q", u)
		}
		gauge := func(ms map[string]metricdata.Metrics, name string) int64 {
			t.Helper()
			g, ok := ms[name].Data.(metricdata.Gauge[int64])
			if !ok || len(g.DataPoints) != 1 {
				t.Fatalf("%s: %+v, want one int gauge point", name, ms[name].Data)
			}
			if v, _ := g.DataPoints[0].Attributes.Value(unherdotel.KeyPolicy); v.AsString() != "api" {
				t.Errorf("%s: policy %q", name, v.AsString())
			}
			return g.DataPoints[0].Value
		}
		if lim, n := gauge(ms, "unherd.concurrency.limit"), gauge(ms, "unherd.concurrency.in_flight"); lim != 2 || n != 2 {
			t.Errorf("limit %d, in flight %d; want 2, 2", lim, n)
		}
		b.Served(time.Now())
		c.Served(time.Now())
		// Read at collection: the gauges follow the limiter without an event.
		ms = collect(t, r)
		if n := gauge(ms, "unherd.concurrency.in_flight"); n != 0 {
			t.Errorf("in flight %d after the releases, want 0", n)
		}
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
		if _, ok := collect(t, r)["unherd.concurrency.limit"]; ok {
			t.Error("the limit gauge is still reported after Unregister")
		}
	})
}

// TestLimiterGaugesAdaptive: the limit gauge follows an adaptive limit
// as releases move it.
func TestLimiterGaugesAdaptive(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	m, err := unherdotel.New(mp, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, drop := observecheck.AdaptiveLimiter(t)
	if _, err := m.RegisterLimiter("db", l); err != nil {
		t.Fatal(err)
	}
	drop()
	g := collect(t, r)["unherd.concurrency.limit"].Data.(metricdata.Gauge[int64])
	if v := g.DataPoints[0].Value; v != int64(l.Limit()) || v >= 10 {
		t.Errorf("limit gauge %v, limiter's limit %d (from 10, after a drop)", v, l.Limit())
	}
}

// TestSpanLimitEvents: a concurrency limiter's events land on the span
// with their own attributes, and no attempt number.
func TestSpanLimitEvents(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "serve")
	o := unherdotel.SpanEvents()
	o.Observe(ctx, observe.Event{Kind: observe.LimitWaited, Priority: "critical", Delay: 20 * time.Millisecond})
	o.Observe(ctx, observe.Event{Kind: observe.LimitChanged, Limit: 12, InFlight: 9})
	span.End()
	var got []map[string]string
	for _, e := range rec.Ended()[0].Events() {
		attrs := map[string]string{"name": e.Name}
		for _, a := range e.Attributes {
			attrs[string(a.Key)] = fmt.Sprint(a.Value.AsInterface())
		}
		got = append(got, attrs)
	}
	want := []map[string]string{
		{"name": "unherd.limit_waited", "unherd.concurrency.priority": "critical", "unherd.delay": "0.02"},
		{"name": "unherd.limit_changed", "unherd.concurrency.limit": "12", "unherd.concurrency.in_flight": "9"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span events (-want +got):\n%s", diff)
	}
}
