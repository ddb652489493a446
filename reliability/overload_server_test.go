//go:build reliability

package reliability

import (
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// workServer is the server of TestOverload: an HTTP server whose handler
// has a fixed capacity of workers. A request takes a worker, waiting for
// one as long as it takes when all are busy (an unbounded queue, as a
// net/http server in front of a worker pool has), then works for a
// lognormal service time. Unless honoursContext is set, neither the wait
// nor the work looks at the request's context: the server goes on working
// for callers who have gone, which is the mechanism of the overload.
//
// It records every piece of work: when the request arrived, when its work
// started and ended, and whether its caller was still waiting when the
// work ended.
type workServer struct {
	url            string
	workers        chan struct{}
	median         time.Duration
	sigma          float64
	honoursContext bool
	// stop ends the run: waiting requests leave the queue and working
	// ones stop, whatever honoursContext says, so that the server can be
	// closed at once. Work cut short so ends at the stop.
	stop     chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	rnd     *rand.Rand
	works   []work
	waiting atomic.Int64 // requests in the handler, waiting or working
	peak    atomic.Int64 // the most requests in the handler at once
}

// work is one request's stay in the handler. start and end are zero if it
// never got a worker.
type work struct {
	arrived, start, end time.Time
	// drawn is the service time drawn for the work; end-start is longer
	// by the timer's lateness, which a loaded machine makes large.
	drawn time.Duration
	// gone is true if the caller had gone (the request's context was
	// done: the client closed the connection, or its deadline passed)
	// when the work ended.
	gone bool
	// cut is true if the work did not run to its end: the handler
	// honoured a cancelled context, or the run stopped.
	cut bool
}

// newWorkServer starts a workServer on loopback behind protect (nil means
// none) and closes it when the test ends.
func newWorkServer(t *testing.T, workers int, median time.Duration, sigma float64, honoursContext bool, protect protection, seed uint64) *workServer {
	s := &workServer{
		workers:        make(chan struct{}, workers),
		median:         median,
		sigma:          sigma,
		honoursContext: honoursContext,
		stop:           make(chan struct{}),
		rnd:            rand.New(rand.NewPCG(seed, 3)),
	}
	var h http.Handler = s
	if protect != nil {
		h = protect(h)
	}
	srv := httptest.NewServer(h)
	// Cleanups run last in, first out: stop the work, then close.
	t.Cleanup(srv.Close)
	t.Cleanup(s.halt)
	s.url = srv.URL
	return s
}

// meanService is the lognormal's mean, median*exp(sigma²/2).
func (s *workServer) meanService() time.Duration {
	return time.Duration(float64(s.median) * math.Exp(s.sigma*s.sigma/2))
}

// capacity is the requests per second the workers complete when always
// busy: workers / mean service time.
func (s *workServer) capacity() float64 {
	return float64(cap(s.workers)) / s.meanService().Seconds()
}

func (s *workServer) halt() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *workServer) service() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(float64(s.median) * math.Exp(s.sigma*s.rnd.NormFloat64()))
}

func (s *workServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	ctx := r.Context()
	// gone is the context's Done when the handler honours it, and a
	// channel that never closes when it does not.
	var gone <-chan struct{}
	if s.honoursContext {
		gone = ctx.Done()
	}
	wk := work{arrived: time.Now()}
	select {
	case s.workers <- struct{}{}:
	case <-gone:
		s.record(wk)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case <-s.stop:
		s.record(wk)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	wk.start = time.Now()
	wk.drawn = s.service()
	timer := time.NewTimer(wk.drawn)
	select {
	case <-timer.C:
	case <-gone:
		wk.cut = true
	case <-s.stop:
		wk.cut = true
	}
	timer.Stop()
	wk.end = time.Now()
	wk.gone = ctx.Err() != nil
	<-s.workers
	s.record(wk)
	if wk.cut {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (s *workServer) record(wk work) {
	s.mu.Lock()
	s.works = append(s.works, wk)
	s.mu.Unlock()
}

// recorded returns a copy of the work recorded so far.
func (s *workServer) recorded() []work {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]work(nil), s.works...)
}
