package unherdotel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
	"github.com/unherd/unherd/unherdotel"
)

// A gRPC method's retry policy: one call that fails twice, then succeeds,
// recorded as gRFC A96's grpc.client.call.retries. The Producer
// registered with the reader and given to New hands the histograms to
// the reader.
func ExampleMetrics_GRPCObserver() {
	prod := unherdotel.NewProducer()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(prod))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	metrics, err := retriedCharge(mp, prod, reader)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mt := range metrics {
		if h, ok := mt.Data.(metricdata.Histogram[int64]); ok && mt.Name == "grpc.client.call.retries" {
			p := h.DataPoints[0]
			method, _ := p.Attributes.Value(unherdotel.KeyMethod)
			fmt.Println(mt.Name, mt.Unit, method.AsString(), "calls:", p.Count, "retries:", p.Sum)
		}
	}
	// Output:
	// grpc.client.call.retries {retry} payments.Payments/Charge calls: 1 retries: 2
}

// The same call with gRFC A96's histograms recorded through the
// MeterProvider's histogram instruments (no Producer): they work with
// any MeterProvider and carry exemplars, at several times the cost per
// call.
func ExampleNew_sdkInstruments() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	metrics, err := retriedCharge(mp, nil, reader)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mt := range metrics {
		switch h := mt.Data.(type) {
		case metricdata.Histogram[int64]:
			fmt.Println(mt.Name, "calls:", h.DataPoints[0].Count, "sum:", h.DataPoints[0].Sum)
		case metricdata.Histogram[float64]:
			fmt.Println(mt.Name, "calls:", h.DataPoints[0].Count, "sum:", h.DataPoints[0].Sum)
		}
	}
	// Output:
	// grpc.client.call.retries calls: 1 sum: 2
	// grpc.client.call.retry_delay calls: 1 sum: 0
}

// retriedCharge records, with the Metrics of mp and prod (nil for none),
// one call of payments.Payments/Charge that fails twice and then
// succeeds, and returns what reader collects then.
func retriedCharge(mp *sdkmetric.MeterProvider, prod *unherdotel.Producer, reader sdkmetric.Reader) ([]metricdata.Metrics, error) {
	m, err := unherdotel.New(mp, prod)
	if err != nil {
		return nil, err
	}
	obs, err := m.GRPCObserver("payments.Payments/Charge", "dns:///payments:443")
	if err != nil {
		return nil, err
	}
	p, err := retry.New(retry.Config{Budget: budget.Unlimited, Backoff: backoff.Schedule{Immediate: true}, Observer: obs})
	if err != nil {
		return nil, err
	}
	n := 0
	_ = p.Do(context.Background(), func(context.Context) error {
		if n++; n < 3 {
			return errors.New("unavailable")
		}
		return nil
	})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		return nil, err
	}
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out, nil
}

// Each request unherd's Transport sends is a client span of its own: here
// a server answers 503 once, and the call's two requests are two spans,
// the second with http.request.resend_count 1.
func ExampleHTTPAttempts() {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n++; n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := unherdhttp.NewTransport(unherdotel.HTTPAttempts(base, tp), unherdhttp.Config{})
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	for _, s := range rec.Ended() {
		var shown []string
		for _, kv := range s.Attributes() {
			if kv.Key == "http.response.status_code" || kv.Key == "http.request.resend_count" {
				shown = append(shown, string(kv.Key)+"="+kv.Value.String())
			}
		}
		fmt.Println(strings.Join(shown, " "))
	}
	// Output:
	// http.response.status_code=503
	// http.request.resend_count=1 http.response.status_code=200
}
