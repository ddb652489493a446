package overload

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Server is the work of the run's server, which a protocol's handler
// calls: it has a fixed capacity of workers. A request takes a worker,
// waiting for one as long as it takes when all are busy (an unbounded
// queue, as a net/http or gRPC server in front of a worker pool has), then
// works for a lognormal service time. Unless honoursContext is set,
// neither the wait nor the work looks at the request's context: the
// server goes on working for callers who have gone, which is the
// mechanism of the overload.
//
// It records every piece of work: when the request arrived, when its work
// started and ended, and whether its caller was still waiting when the
// work ended. A Server is safe for concurrent use.
type Server struct {
	workers        chan struct{}
	median         time.Duration
	sigma          float64
	honoursContext bool
	// stop ends the run: waiting requests leave the queue and working
	// ones stop, whatever honoursContext says, so that the protocol's
	// server can be closed at once. Work cut short so ends at the stop.
	stop     chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	rnd     *rand.Rand
	works   []work
	waiting atomic.Int64 // requests in Serve, waiting or working
	peak    atomic.Int64 // the most requests in Serve at once
}

// work is one request's stay in the handler. start and end are zero if it
// never got a worker.
type work struct {
	arrived, start, end time.Time
	// drawn is the service time drawn for the work; end-start is longer
	// by the timer's lateness, which a loaded machine makes large.
	drawn time.Duration
	// gone is true if the caller had gone (the request's context was
	// done: the client closed the connection or cancelled the stream, or
	// its deadline passed) when the work ended.
	gone bool
	// cut is true if the work did not run to its end: the handler
	// honoured a cancelled context, or the run stopped.
	cut bool
}

// newServer returns a Server with workers workers, a service time of
// median and sigma (of its log), its draws seeded by seed.
func newServer(workers int, median time.Duration, sigma float64, honoursContext bool, seed uint64) *Server {
	return &Server{
		workers:        make(chan struct{}, workers),
		median:         median,
		sigma:          sigma,
		honoursContext: honoursContext,
		stop:           make(chan struct{}),
		rnd:            rand.New(rand.NewPCG(seed, 3)),
	}
}

// meanService is the lognormal's mean, median*exp(sigma²/2).
func (s *Server) meanService() time.Duration {
	return time.Duration(float64(s.median) * math.Exp(s.sigma*s.sigma/2))
}

// capacity is the requests per second the workers complete when always
// busy: workers / mean service time.
func (s *Server) capacity() float64 {
	return float64(cap(s.workers)) / s.meanService().Seconds()
}

// halt ends the run's work: see stop.
func (s *Server) halt() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *Server) service() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(float64(s.median) * math.Exp(s.sigma*s.rnd.NormFloat64()))
}

// Serve is one request's stay in the handler: it waits for a worker and
// works, then reports whether the work ran to its end (the handler then
// answers with success; otherwise with a server error). ctx is the
// request's context: it is looked at only when the row's handler
// honours it, and to record whether the caller had gone.
func (s *Server) Serve(ctx context.Context) bool {
	n := s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
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
		return false
	case <-s.stop:
		s.record(wk)
		return false
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
	return !wk.cut
}

func (s *Server) record(wk work) {
	s.mu.Lock()
	s.works = append(s.works, wk)
	s.mu.Unlock()
}

// recorded returns a copy of the work recorded so far.
func (s *Server) recorded() []work {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]work(nil), s.works...)
}
