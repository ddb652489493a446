package unherdotel

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// ErrProducerNotRegistered is reported to the OpenTelemetry error
// handler (otel.Handle) when a MeterProvider collected the Metrics a
// Producer was given to, but no reader collected the Producer: it was
// not registered with sdkmetric.WithProducer. Its gRPC observers then
// record gRFC A96's histograms through the MeterProvider's instruments.
var ErrProducerNotRegistered = errors.New("unherdotel: the MeterProvider collected, but not the Producer given to New: " +
	"register it with sdkmetric.WithProducer on every reader; gRFC A96's histograms go through " +
	"the MeterProvider's histogram instruments from now on, without the calls that ended before")

// producerGrace is how long after the first collection of a Producer's
// Metrics (or after that collection's deadline, if later) a collection
// without the Producer means it is not registered: by then the first
// collection, which would have collected it, has ended.
const producerGrace = time.Second

// Producer aggregates gRFC A96's per-call histograms of the gRPC
// observers of the Metrics it is given to (New) and reports them when a
// reader collects. It implements the OpenTelemetry SDK's
// go.opentelemetry.io/otel/sdk/metric.Producer: register it with every
// reader of the MeterProvider, with sdkmetric.WithProducer(p), when the
// reader is made, and give it to New with that MeterProvider.
//
// If the MeterProvider collects and no reader collects p, p reports
// ErrProducerNotRegistered to the OpenTelemetry error handler (which
// logs it by default) and hands the histograms over to the
// MeterProvider's histogram instruments: the observers record them
// there from then on, and p reports nothing more. It tells by time: a
// collection of the Metrics that comes a second or more after the first
// one, or after that first one's deadline, with no collection of p in
// between. It cannot tell a reader without p when another reader of
// the same MeterProvider has it, nor a MeterProvider that collects only
// once (at shutdown, say): register it with each reader.
//
// The histograms it reports are those the SDK's instruments would
// give (New with a nil Producer): the same names, units, descriptions,
// bucket boundaries, attributes (grpc.method, grpc.target), counts,
// sums, minimums and maximums, under the instrumentation scope
// ScopeName. They differ in what the SDK would add at collection: they
// are always cumulative (the reader's temporality selector does not
// apply to a producer's data), they carry no exemplars, and the
// MeterProvider's views do not apply to them. Observers made for the
// same method and target share one data point, as they share one
// series of the SDK's instruments; its start time is when the first of
// them was made. The aggregation of every observer lives as long as p:
// make one observer per method and target and keep it.
//
// A Producer is safe for concurrent use. The zero value is a Producer
// with no observer yet, as NewProducer returns.
type Producer struct {
	mu   sync.Mutex                      // held by Produce (the hot-cold swaps must not overlap), agg and collected
	aggs []*grpcAgg                      // one per method and target, in the order first made
	sets map[attribute.Distinct]*grpcAgg // the same, by attribute set
	due  time.Time                       // zero until a first collection of the Metrics; see producerGrace

	// produced is set by the first Produce; direct, once the Metrics
	// were collected without it, sends the observers to the SDK's
	// instruments. Both are set under mu and never cleared.
	produced, direct atomic.Bool
}

// NewProducer returns a Producer with no observer yet.
func NewProducer() *Producer { return new(Producer) }

// agg returns the aggregation for the attribute set, made on first use.
func (p *Producer) agg(set attribute.Set) *grpcAgg {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.sets[set.Equivalent()]; ok {
		return a
	}
	a := newGRPCAgg(set, time.Now())
	if p.sets == nil {
		p.sets = map[attribute.Distinct]*grpcAgg{}
	}
	p.sets[set.Equivalent()] = a
	p.aggs = append(p.aggs, a)
	return a
}

// Produce returns the cumulative histograms of every gRPC observer of
// p's Metrics that has recorded at least one call: one ScopeMetrics for
// ScopeName holding those of grpc.client.call.retries,
// grpc.client.call.hedges and grpc.client.call.retry_delay that have a
// data point, or none if nothing was recorded (or the histograms went
// over to the SDK's instruments, see Producer). It never fails.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.produced.Store(true)
	if p.direct.Load() {
		return nil, nil // the SDK's instruments have them
	}
	t := time.Now()
	var retries, hedges []metricdata.HistogramDataPoint[int64]
	var delays []metricdata.HistogramDataPoint[float64]
	for _, a := range p.aggs {
		r, h, d := a.snapshot()
		if pt, ok := r.dataPoint(a, t); ok {
			retries = append(retries, pt)
		}
		if pt, ok := h.dataPoint(a, t); ok {
			hedges = append(hedges, pt)
		}
		if pt, ok := d.dataPoint(a, t); ok {
			delays = append(delays, pt)
		}
	}
	var ms []metricdata.Metrics
	for _, h := range []struct {
		desc *histogramDesc
		pts  []metricdata.HistogramDataPoint[int64]
	}{{&callRetriesDesc, retries}, {&callHedgesDesc, hedges}} {
		if len(h.pts) > 0 {
			ms = append(ms, h.desc.metric(metricdata.Histogram[int64]{
				DataPoints: h.pts, Temporality: metricdata.CumulativeTemporality}))
		}
	}
	if len(delays) > 0 {
		ms = append(ms, callRetryDelayDesc.metric(metricdata.Histogram[float64]{
			DataPoints: delays, Temporality: metricdata.CumulativeTemporality}))
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: ScopeName}, Metrics: ms}}, nil
}

// collected is called by every collection of a Metrics given p (its
// callback, which runs before the reader's producers): see Producer.
func (p *Producer) collected(ctx context.Context) {
	if p.produced.Load() || p.direct.Load() {
		return
	}
	if p.switchToSDK(ctx, time.Now()) {
		otel.Handle(ErrProducerNotRegistered) // outside the lock: the handler is the user's
	}
}

// switchToSDK sets direct, and reports true, if a collection at now
// with ctx shows that p is not collected: see Producer.
func (p *Producer) switchToSDK(ctx context.Context, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.produced.Load() || p.direct.Load():
		return false
	case p.due.IsZero():
		p.due = now.Add(producerGrace)
		if d, ok := ctx.Deadline(); ok && d.After(p.due) {
			p.due = d
		}
		return false
	case now.Before(p.due):
		return false
	}
	p.direct.Store(true)
	return true
}

// histogramDesc is one of A96's histograms as an instrument declares it.
type histogramDesc struct {
	name, unit, desc string
	bounds           []float64
}

func (h *histogramDesc) metric(data metricdata.Aggregation) metricdata.Metrics {
	return metricdata.Metrics{Name: h.name, Description: h.desc, Unit: h.unit, Data: data}
}

// gRFC A96's histograms; New makes its SDK instruments from the same.
var (
	callRetriesDesc = histogramDesc{"grpc.client.call.retries", "{retry}",
		"Number of retries during the client call. If there were no retries, 0 is not reported.", countBounds[:]}
	callHedgesDesc = histogramDesc{"grpc.client.call.hedges", "{hedge}",
		"Number of hedges during the client call. If there were no hedges, 0 is not reported.", countBounds[:]}
	callRetryDelayDesc = histogramDesc{"grpc.client.call.retry_delay", "s",
		"Total time of delay while there is no active attempt during the client call.", latency[:]}
)

// countBounds are A96's bucket boundaries for the retry and hedge counts.
var countBounds = [...]float64{1, 2, 3, 4, 5}

// latency are gRFC A66's latency bucket boundaries, in seconds.
var latency = [...]float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
	0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25,
	0.3, 0.4, 0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}

// grpcAgg is one gRPC observer's A96 histograms.
type grpcAgg struct {
	set   attribute.Set
	start time.Time
	calls struct {
		wg  hotCold
		pts [2]callPoint
	}
	hedges struct {
		wg  hotCold
		pts [2]countHist
	}
}

func newGRPCAgg(set attribute.Set, start time.Time) *grpcAgg {
	a := &grpcAgg{set: set, start: start}
	for i := range 2 {
		a.calls.pts[i].reset()
		a.hedges.pts[i].reset()
	}
	return a
}

// recordCall records a call that retried: retries >= 1, and its total
// delay between attempts.
func (a *grpcAgg) recordCall(retries int64, delay time.Duration) {
	i := a.calls.wg.start()
	a.calls.pts[i].record(retries, delay)
	a.calls.wg.done(i)
}

// recordHedges records a hedged call's hedges, >= 1.
func (a *grpcAgg) recordHedges(hedges int64) {
	i := a.hedges.wg.start()
	a.hedges.pts[i].record(hedges)
	a.hedges.wg.done(i)
}

// snapshot reads the cumulative histograms, for Produce.
func (a *grpcAgg) snapshot() (retries, hedges countPoint, delay delayPoint) {
	i := a.calls.wg.swapAndWait()
	a.calls.pts[i].snapshot(&retries, &delay)
	a.calls.pts[i].mergeInto(&a.calls.pts[1-i])
	i = a.hedges.wg.swapAndWait()
	a.hedges.pts[i].snapshot(&hedges)
	a.hedges.pts[i].mergeInto(&a.hedges.pts[1-i])
	return retries, hedges, delay
}

// countBucket is the bucket of countBounds that holds v >= 1: bucket i
// < len(countBounds) holds only the value i+1.
func countBucket(v int64) int { return int(min(v, int64(len(countBounds))+1) - 1) }

// countSum is the sum of the counts in buckets (over countBounds), over
// being the sum of those in the last bucket.
func countSum(buckets []uint64, over int64) int64 {
	for i, n := range buckets[:len(countBounds)] {
		over += int64(n) * int64(i+1)
	}
	return over
}

// callPoint is a call's retries and delay, counted together:
// joint[i][j] counts the calls whose retries fall in bucket i of
// countBounds and whose delay in bucket j of latency. The retries'
// bucket counts are its rows' sums and the delay's its columns', so one
// add counts a call in both histograms.
type callPoint struct {
	joint  [len(countBounds) + 1][len(latency) + 1]atomic.Uint64
	over   atomic.Int64 // the sum of the retries in the last bucket
	delay  atomic.Int64 // the sum of the delays, in nanoseconds (exact)
	rx, dx extrema      // of the retries, and of the delays in nanoseconds
}

func (p *callPoint) reset() {
	for i := range p.joint {
		for j := range p.joint[i] {
			p.joint[i][j].Store(0)
		}
	}
	p.over.Store(0)
	p.delay.Store(0)
	p.rx.reset()
	p.dx.reset()
}

func (p *callPoint) record(retries int64, d time.Duration) {
	i := countBucket(retries)
	p.joint[i][delayBucket(d)].Add(1)
	if i == len(countBounds) {
		p.over.Add(retries)
	}
	if d != 0 {
		p.delay.Add(int64(d))
	}
	p.rx.update(retries)
	p.dx.update(int64(d))
}

func (p *callPoint) mergeInto(into *callPoint) {
	for i := range p.joint {
		for j := range p.joint[i] {
			if n := p.joint[i][j].Load(); n != 0 {
				into.joint[i][j].Add(n)
			}
		}
	}
	into.over.Add(p.over.Load())
	into.delay.Add(p.delay.Load())
	p.rx.mergeInto(&into.rx)
	p.dx.mergeInto(&into.dx)
	p.reset()
}

func (p *callPoint) snapshot(r *countPoint, d *delayPoint) {
	r.buckets = make([]uint64, len(p.joint))
	d.buckets = make([]uint64, len(p.joint[0]))
	for i := range p.joint {
		for j := range p.joint[i] {
			n := p.joint[i][j].Load()
			r.buckets[i] += n
			d.buckets[j] += n
			r.count += n
		}
	}
	d.count = r.count
	r.sum = countSum(r.buckets, p.over.Load())
	d.sum = time.Duration(p.delay.Load())
	r.min, r.max = p.rx.min.Load(), p.rx.max.Load()
	d.min, d.max = time.Duration(p.dx.min.Load()), time.Duration(p.dx.max.Load())
}

// extrema are an atomic minimum and maximum, math.MaxInt64 and
// math.MinInt64 while empty.
type extrema struct{ min, max atomic.Int64 }

func (x *extrema) reset() {
	x.min.Store(math.MaxInt64)
	x.max.Store(math.MinInt64)
}

// update costs two loads unless v is a new extreme.
func (x *extrema) update(v int64) {
	for old := x.min.Load(); v < old && !x.min.CompareAndSwap(old, v); old = x.min.Load() {
	}
	for old := x.max.Load(); v > old && !x.max.CompareAndSwap(old, v); old = x.max.Load() {
	}
}

func (x *extrema) mergeInto(into *extrema) {
	if mn, mx := x.min.Load(), x.max.Load(); mn <= mx { // not empty
		into.update(mn)
		into.update(mx)
	}
	x.reset()
}

// countHist is a histogram of counts >= 1 over countBounds.
type countHist struct {
	buckets [len(countBounds) + 1]atomic.Uint64
	over    atomic.Int64 // the sum of the values in the last bucket
	x       extrema
}

func (h *countHist) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.over.Store(0)
	h.x.reset()
}

func (h *countHist) record(v int64) {
	i := countBucket(v)
	h.buckets[i].Add(1)
	if i == len(countBounds) {
		h.over.Add(v)
	}
	h.x.update(v)
}

func (h *countHist) mergeInto(into *countHist) {
	for i := range h.buckets {
		into.buckets[i].Add(h.buckets[i].Load())
	}
	into.over.Add(h.over.Load())
	h.x.mergeInto(&into.x)
	h.reset()
}

func (h *countHist) snapshot(p *countPoint) {
	p.buckets = make([]uint64, len(h.buckets))
	for i := range h.buckets {
		p.buckets[i] = h.buckets[i].Load()
		p.count += p.buckets[i]
	}
	p.sum = countSum(p.buckets, h.over.Load())
	p.min, p.max = h.x.min.Load(), h.x.max.Load()
}

// countPoint is a count histogram as read.
type countPoint struct {
	buckets  []uint64
	count    uint64
	sum      int64
	min, max int64
}

func (p *countPoint) dataPoint(a *grpcAgg, t time.Time) (metricdata.HistogramDataPoint[int64], bool) {
	if p.count == 0 {
		return metricdata.HistogramDataPoint[int64]{}, false
	}
	return metricdata.HistogramDataPoint[int64]{Attributes: a.set, StartTime: a.start, Time: t, Count: p.count,
		Bounds: slices.Clone(countBounds[:]), BucketCounts: p.buckets,
		Min: metricdata.NewExtrema(p.min), Max: metricdata.NewExtrema(p.max), Sum: p.sum}, true
}

// delayPoint is the delay histogram as read.
type delayPoint struct {
	buckets  []uint64
	count    uint64
	sum      time.Duration
	min, max time.Duration
}

func (p *delayPoint) dataPoint(a *grpcAgg, t time.Time) (metricdata.HistogramDataPoint[float64], bool) {
	if p.count == 0 {
		return metricdata.HistogramDataPoint[float64]{}, false
	}
	return metricdata.HistogramDataPoint[float64]{Attributes: a.set, StartTime: a.start, Time: t, Count: p.count,
		Bounds: slices.Clone(latency[:]), BucketCounts: p.buckets,
		Min: metricdata.NewExtrema(p.min.Seconds()), Max: metricdata.NewExtrema(p.max.Seconds()), Sum: p.sum.Seconds()}, true
}

// delayBucket returns the bucket of latency the SDK's explicit-bucket
// histogram puts d.Seconds() in (the first bound at or above it,
// len(latency) if none), comparing nanoseconds with latencyNs.
func delayBucket(d time.Duration) int {
	lo, hi := 0, len(latencyNs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if latencyNs[m] < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// latencyNs[i] is the longest duration whose Seconds() is at most
// latency[i]. Seconds() never decreases as a duration grows, so
// d.Seconds() <= latency[i] exactly when d <= latencyNs[i].
var latencyNs = func() (ns [len(latency)]time.Duration) {
	for i, b := range latency {
		d := time.Duration(b * 1e9)
		for (d + 1).Seconds() <= b {
			d++
		}
		for d.Seconds() > b {
			d--
		}
		ns[i] = d
	}
	return ns
}()

// hotCold lets records run without a lock while a collection reads a
// consistent snapshot: records go to the hot one of two points; a
// collection swaps hot and cold, waits for the records that had started
// on the now-cold point, reads it, and merges it into the hot one. The
// same scheme as the SDK's histograms and client_golang's.
type hotCold struct {
	// started counts the records started since the last swap, in its
	// low 63 bits, and holds the hot index in its top bit.
	started atomic.Uint64
	ended   [2]atomic.Uint64
}

func (w *hotCold) start() uint64 { return w.started.Add(1) >> 63 }
func (w *hotCold) done(i uint64) { w.ended[i].Add(1) }

// swapAndWait makes the cold point hot and returns the index of the
// formerly hot one once every record on it has ended. Calls must not
// overlap (Produce holds its mutex).
func (w *hotCold) swapAndWait() uint64 {
	cold := (^w.started.Load()) >> 63
	n := w.started.Swap(cold << 63)
	hot, count := n>>63, n&(1<<63-1)
	for w.ended[hot].Load() != count {
		runtime.Gosched()
	}
	w.ended[hot].Store(0)
	return hot
}
