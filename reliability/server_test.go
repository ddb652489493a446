//go:build reliability

package reliability

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// schedule is a run's timeline: a warm-up that is not measured, the
// window before the fault, the fault, and the window after it.
type schedule struct {
	warm, before, fault, after time.Duration
}

func (s schedule) faultStart() time.Duration { return s.warm + s.before }
func (s schedule) faultEnd() time.Duration   { return s.faultStart() + s.fault }
func (s schedule) total() time.Duration      { return s.faultEnd() + s.after }

// bucket is the resolution of the server's counters.
const bucket = 50 * time.Millisecond

// server is an HTTP server with a fixed capacity: up to slots requests
// at a time, each taking service; a request over capacity is answered 503
// at once. During the schedule's fault it answers 503 to everything. It
// counts the requests it receives and the ones it served, per bucket, and
// the TCP connections it accepted.
type server struct {
	url     string
	start   time.Time
	sched   schedule
	service time.Duration
	slots   chan struct{}
	reqs    []atomic.Int64
	oks     []atomic.Int64
	conns   atomic.Int64
}

func newServer(t *testing.T, sched schedule, capacity int, service time.Duration) *server {
	n := int(sched.total()/bucket) + 1
	s := &server{
		sched:   sched,
		service: service,
		slots:   make(chan struct{}, capacity),
		reqs:    make([]atomic.Int64, n),
		oks:     make([]atomic.Int64, n),
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = &countingListener{Listener: srv.Listener, n: &s.conns}
	srv.Start()
	t.Cleanup(srv.Close)
	s.url = srv.URL
	s.start = time.Now()
	return s
}

// at returns the bucket of the instant now.
func (s *server) at(now time.Time) int {
	return min(max(int(now.Sub(s.start)/bucket), 0), len(s.reqs)-1)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	s.reqs[s.at(now)].Add(1)
	if e := now.Sub(s.start); e >= s.sched.faultStart() && e < s.sched.faultEnd() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	// The request's work: the server holds the slot for its duration.
	time.Sleep(s.service)
	<-s.slots
	s.oks[s.at(time.Now())].Add(1)
	_, _ = w.Write([]byte("ok"))
}

// rate returns the per-second rate of the counters over [from, to) of
// the schedule.
func (s *server) rate(c []atomic.Int64, from, to time.Duration) float64 {
	var sum int64
	i, j := int(from/bucket), int(to/bucket)
	for k := i; k < j && k < len(c); k++ {
		sum += c[k].Load()
	}
	return float64(sum) / (float64(j-i) * bucket.Seconds())
}

// recovery returns how long after the fault's end goodput, averaged over
// window, first reached frac of its rate before the fault; ok is false if
// it did not within the window after the fault.
func (s *server) recovery(frac float64, window time.Duration) (d time.Duration, ok bool) {
	want := frac * s.rate(s.oks, s.sched.warm, s.sched.faultStart())
	for from := s.sched.faultEnd(); from+window <= s.sched.total(); from += bucket {
		if s.rate(s.oks, from, from+window) >= want {
			return from - s.sched.faultEnd(), true
		}
	}
	return 0, false
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
