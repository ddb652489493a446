//go:build reliability

package reliability

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/overload"
	"github.com/unherd/unherd/internal/pause"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// clientType is one way of calling the server: a RoundTripper and a
// logical call that reports whether it ended with a 200.
type clientType struct {
	name  string
	newRT func(t *testing.T) http.RoundTripper
	call  func(ctx context.Context, rt http.RoundTripper, url string) bool
}

var clientTypes = []clientType{
	{name: "unherd defaults", newRT: unherd(unherdhttp.Config{}), call: once},
	{name: "unherd, ReturnAtOnce", newRT: unherd(unherdhttp.Config{Retry: retry.Config{OnBudgetExhausted: retry.ReturnAtOnce}}), call: once},
	{name: "unherd, WaitRetryDelay", newRT: unherd(unherdhttp.Config{Retry: retry.Config{OnBudgetExhausted: retry.WaitRetryDelay}}), call: once},
	{
		name:  "naive, 3 attempts 1 s apart",
		newRT: pooled,
		call:  naive(time.Second),
	},
	{
		name:  "naive, 3 immediate attempts",
		newRT: pooled,
		call:  naive(0),
	},
}

// unherd returns the constructor of a Transport built from cfg, over a
// nil base.
func unherd(cfg unherdhttp.Config) func(t *testing.T) http.RoundTripper {
	return func(t *testing.T) http.RoundTripper {
		tr, err := unherdhttp.NewTransport(nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.CloseIdleConnections)
		return tr
	}
}

// once is a logical call of one request: the Transport retries.
func once(ctx context.Context, rt http.RoundTripper, url string) bool {
	return get(ctx, rt, url) == http.StatusOK
}

// pooled is the transport of the hand-written clients: a clone of
// http.DefaultTransport with as many idle connections per host as there
// are callers, so that they differ from unherd's defaults in their retries
// only, not in their connection pool.
func pooled(t *testing.T) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = callers
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// naive is the retry loop written by hand: three attempts, gap apart,
// retrying any failure.
func naive(gap time.Duration) func(ctx context.Context, rt http.RoundTripper, url string) bool {
	return func(ctx context.Context, rt http.RoundTripper, url string) bool {
		for i := range 3 {
			if i > 0 && gap > 0 && !pause.For(ctx, gap) {
				return false
			}
			if get(ctx, rt, url) == http.StatusOK {
				return true
			}
		}
		return false
	}
}

// get sends one GET and returns its status, 0 for a transport error.
func get(ctx context.Context, rt http.RoundTripper, url string) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// population drives a client type until ctx ends.
type population struct {
	name string
	run  func(ctx context.Context, c clientType, rt http.RoundTripper, url string)
}

const (
	// callers is the size of the closed population.
	callers = 200
	// think is the mean time a caller of the closed population spends
	// after a success before it calls again (drawn uniformly from half to
	// one and a half times it, so that callers do not march in step);
	// after a failure it comes straight back, as a worker whose message is
	// redelivered at once does.
	think = 100 * time.Millisecond
	// openRate is the open stream's arrivals per second, about the closed
	// population's rate before the fault (callers / (think + service)).
	openRate = 1800
)

// seed seeds the populations' random draws (think times, arrivals): 1,
// or $UNHERD_RELIABILITY_SEED, to run the suite over other draws.
var seed = func() uint64 {
	s, err := overload.Seed()
	if err != nil {
		panic(err)
	}
	return s
}()

var populations = []population{
	{name: "closed", run: closed},
	{name: "open", run: open},
}

// closed is the closed population: callers goroutines that each call in a
// loop, starting at seeded random instants within one think time.
func closed(ctx context.Context, c clientType, rt http.RoundTripper, url string) {
	var wg sync.WaitGroup
	for i := range callers {
		r := rand.New(rand.NewPCG(uint64(i), seed))
		thinkTime := func() time.Duration { return think/2 + time.Duration(r.Int64N(int64(think))) }
		wg.Go(func() {
			pause.For(ctx, thinkTime())
			for ctx.Err() == nil {
				if c.call(ctx, rt, url) {
					pause.For(ctx, thinkTime())
				}
			}
		})
	}
	wg.Wait()
}

// open is the open stream: calls that arrive at openRate per second,
// exponentially spaced (a seeded Poisson process), each on a goroutine of
// its own, whatever happened to the earlier ones.
func open(ctx context.Context, c clientType, rt http.RoundTripper, url string) {
	r := rand.New(rand.NewPCG(seed, 2))
	var wg sync.WaitGroup
	next := time.Now()
	for ctx.Err() == nil {
		next = next.Add(time.Duration(r.ExpFloat64() / openRate * float64(time.Second)))
		if d := time.Until(next); d > 0 && !pause.For(ctx, d) {
			break
		}
		wg.Go(func() { c.call(ctx, rt, url) })
	}
	wg.Wait()
}
