package overload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/internal/pause"
)

// phase is a stretch of the run's offered load, as a multiple of the
// server's capacity.
type phase struct {
	name string
	load float64
}

// phases is the run: half the capacity, twice, four times, and
// half again.
var phases = []phase{{"0.5x", 0.5}, {"2x", 2}, {"4x", 4}, {"0.5x after", 0.5}}

// Caller makes one call through a protocol's client, with ctx (which
// carries the caller's timeout) and marked critical or not, and reports
// whether it succeeded: a success and its whole answer, before the
// timeout.
type Caller func(ctx context.Context, critical bool) bool

// call is one caller's logical call: one request through the client,
// which may retry it, within the caller's timeout.
type call struct {
	// scheduled is the instant the Poisson process drew for the call;
	// arrived is when it started, later if the generator fell behind.
	scheduled, arrived, done time.Time
	critical                 bool
	ok                       bool // the Caller's success
	// refused is true if the harness did not start the call because
	// maxInFlight calls were in flight already; it counts as a failure.
	refused bool
}

// offer is an open-loop load: for each phase in turn, for phaseLen, calls
// arrive as a seeded Poisson process at the phase's load times capacity
// per second, each on a goroutine of its own with a context that times
// out after timeout, whatever happened to the earlier ones; a share
// critical of them (drawn at random) are marked critical. At most
// maxInFlight calls run at once; an arrival over that is refused and
// counted as a failure, so a run cannot pile up without bound. run
// returns when every call has ended (each within timeout), with the
// instant the first phase started, or with an error if some have not 5 s
// after their timeout.
type offer struct {
	capacity    float64
	phaseLen    time.Duration
	timeout     time.Duration
	critical    float64
	maxInFlight int64
	seed        uint64
}

func (o offer) run(do Caller) (start time.Time, calls []call, err error) {
	r := rand.New(rand.NewPCG(o.seed, 4))
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		inFlight atomic.Int64
	)
	keep := func(c call) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
	}
	start = time.Now()
	for i, p := range phases {
		rate := p.load * o.capacity
		end := start.Add(time.Duration(i+1) * o.phaseLen)
		// Exponential gaps are memoryless: each phase starts its own
		// process at its start.
		next := start.Add(time.Duration(i) * o.phaseLen)
		for {
			next = next.Add(time.Duration(r.ExpFloat64() / rate * float64(time.Second)))
			if !next.Before(end) {
				break
			}
			critical := r.Float64() < o.critical
			pause.For(context.Background(), time.Until(next))
			if inFlight.Add(1) > o.maxInFlight {
				inFlight.Add(-1)
				now := time.Now()
				keep(call{scheduled: next, arrived: now, done: now, critical: critical, refused: true})
				continue
			}
			at := next
			wg.Go(func() {
				defer inFlight.Add(-1)
				c := o.call(do, critical)
				c.scheduled = at
				keep(c)
			})
		}
		pause.For(context.Background(), time.Until(end))
	}
	ended := make(chan struct{})
	go func() {
		wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(o.timeout + 5*time.Second):
		mu.Lock()
		defer mu.Unlock()
		return start, calls, fmt.Errorf("%d calls still running %v after the last phase, though each has a %v timeout", inFlight.Load(), o.timeout+5*time.Second, o.timeout)
	}
	return start, calls, nil
}

// call makes one call with the caller's timeout.
func (o offer) call(do Caller, critical bool) call {
	c := call{arrived: time.Now(), critical: critical}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	c.ok = do(ctx, critical)
	c.done = time.Now()
	return c
}
