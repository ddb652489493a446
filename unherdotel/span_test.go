package unherdotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/unherdotel"
)

// TestSpanEvents: a retried call's events land on the span of the
// context it was called with.
func TestSpanEvents(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "charge")
	m, _ := setup(t)
	retriedCtx(t, ctx, observe.Multi(unherdotel.SpanEvents(), must(m.Observer("payments"))))
	span.End()
	// Without a span, nothing happens (and nothing panics).
	unherdotel.SpanEvents().Observe(context.Background(), observe.Event{Kind: observe.Attempt, Attempt: 1})
	ended := rec.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans ended, want 1", len(ended))
	}
	var names []string
	for _, e := range ended[0].Events() {
		names = append(names, e.Name)
	}
	want := []string{"unherd.attempt", "unherd.retry", "unherd.attempt", "unherd.retry", "unherd.attempt", "unherd.success"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("span events (-want +got):\n%s", diff)
	}
	retry := ended[0].Events()[1]
	got := map[string]string{}
	for _, a := range retry.Attributes {
		got[string(a.Key)] = fmt.Sprint(a.Value.AsInterface())
	}
	if diff := cmp.Diff(map[string]string{"unherd.attempt": "1", "unherd.delay": "0.01",
		"unherd.failure.class": "transient", "exception.message": "down"}, got); diff != "" {
		t.Errorf("retry event attributes (-want +got):\n%s", diff)
	}
}

// TestSpanRateEvent: a rate limiter's wait lands on the span with its
// fill rate and delay, and no attempt number (it has none).
func TestSpanRateEvent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "charge")
	unherdotel.SpanEvents().Observe(ctx, observe.Event{Kind: observe.RateDelayed, Delay: 2 * time.Second, Rate: 0.5})
	span.End()
	events := rec.Ended()[0].Events()
	if len(events) != 1 || events[0].Name != "unherd.rate_delayed" {
		t.Fatalf("span events %v, want one unherd.rate_delayed", events)
	}
	got := map[string]string{}
	for _, a := range events[0].Attributes {
		got[string(a.Key)] = fmt.Sprint(a.Value.AsInterface())
	}
	if diff := cmp.Diff(map[string]string{"unherd.rate_limiter.fill_rate": "0.5", "unherd.delay": "2"}, got); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
}
