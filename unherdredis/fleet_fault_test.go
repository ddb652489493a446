package unherdredis_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/fleet/fleettest"
	"github.com/unherd/unherd/internal/services"
	"github.com/unherd/unherd/toxitest"
	"github.com/unherd/unherd/unherdredis"
)

// fastClient is a client whose own timeouts are short, so that Close
// never waits long for an abandoned command.
func fastClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond,
		ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, PoolSize: 8})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// timeline is a budget's state changes as a test saw them.
type timeline struct {
	mu     sync.Mutex
	start  time.Time
	events []string
	states chan fleet.State
}

func newTimeline() *timeline { return &timeline{start: time.Now(), states: make(chan fleet.State, 16)} }

func (tl *timeline) note(what string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	now := time.Now()
	tl.events = append(tl.events, now.Sub(tl.start).Round(time.Millisecond).String()+" "+what)
	return now
}

func (tl *timeline) hook(s fleet.State, err error) {
	what := "state " + s.String()
	if err != nil {
		what += " (" + err.Error() + ")"
	}
	tl.note(what)
	tl.states <- s
}

// await waits for the budget to reach state s, failing t after d. It
// waits on a real server, so in real time.
func (tl *timeline) await(t *testing.T, s fleet.State, d time.Duration) time.Time {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case got := <-tl.states:
			if got == s {
				return time.Now()
			}
		case <-timer.C:
			t.Fatalf("no state %v within %v; timeline:\n%s", s, d, strings.Join(tl.events, "\n"))
		}
	}
}

// outage runs one budget with steady traffic (a request that fails and
// asks for a retry every millisecond) through cut and heal, and checks a
// clean fallback and recovery: the hook fires within the longest gap
// between two syncs (half the window, for a process that skips syncs,
// see fleet.Budget.Run) and 200 ms for the scheduler, retries in fallback
// stay within the process's pace, no Withdraw waits, and the budget is
// shared again within a second of the heal.
func outage(t *testing.T, c redis.UniversalClient, cut, heal func()) {
	tl := newTimeline()
	cfg := unherdredis.BudgetConfig{Config: fleettest.Config(), Prefix: uniquePrefix(t)}
	cfg.OnState = tl.hook
	b, err := unherdredis.NewBudget(c, "outage", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var inFallback atomic.Bool
	var requests, fbRequests, fbRetries, slowest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			t0 := time.Now()
			b.Record(budget.Attempt{N: 1, Failed: true})
			requests.Add(1)
			ok := b.Withdraw(failure.Transient)
			if d := int64(time.Since(t0)); d > slowest.Load() {
				slowest.Store(d)
			}
			if inFallback.Load() && b.State() == fleet.Fallback {
				fbRequests.Add(1)
				if ok {
					fbRetries.Add(1)
				}
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	tl.await(t, fleet.Shared, 2*time.Second)
	time.Sleep(300 * time.Millisecond) // some shared traffic first
	cutAt := tl.note("cut")
	cut()
	fellBack := tl.await(t, fleet.Fallback, 2*time.Second)
	inFallback.Store(true)
	time.Sleep(time.Second + 100*time.Millisecond) // more than a window of fallback
	inFallback.Store(false)
	seen := requests.Load()
	healAt := tl.note("heal")
	heal()
	back := tl.await(t, fleet.Shared, 3*time.Second)
	t.Logf("timeline:\n%s", strings.Join(tl.events, "\n"))
	t.Logf("fallback %v after the cut, shared again %v after the heal; in fallback %d retries for %d requests; slowest Withdraw+Record %v",
		fellBack.Sub(cutAt).Round(time.Millisecond), back.Sub(healAt).Round(time.Millisecond), fbRetries.Load(), fbRequests.Load(), time.Duration(slowest.Load()))
	if d, lim := fellBack.Sub(cutAt), cfg.SyncInterval+cfg.Timeout+200*time.Millisecond; d > lim {
		t.Errorf("fallback %v after the cut, want within %v", d, lim)
	}
	if d := back.Sub(healAt); d > time.Second {
		t.Errorf("shared again %v after the heal, want within 1s", d)
	}
	// In fallback the process spends what is left of its lease (leased
	// for 10% of its requests before the cut), then its pacer's 10% of
	// the requests since, plus the floor (the whole fleet's 5 a second:
	// it is alone), with at most a hundredth of the window saved. Over
	// the 1.1 s measured, after 300 ms of shared traffic, that is less
	// than 10% of all requests so far, plus 2.
	if lim := seen/10 + 2; fbRetries.Load() > lim {
		t.Errorf("fallback allowed %d retries (%d requests in fallback, %d in all), want at most %d", fbRetries.Load(), fbRequests.Load(), seen, lim)
	}
}

// A Redis killed in the middle of the test, and started again on the
// same port.
func TestFleetRedisStopped(t *testing.T) {
	s := services.StartRedis(t)
	outage(t, fastClient(t, s.Addr), s.Kill, s.Start)
}

// A Redis that turns slow (300 ms each way, three times the sync's
// timeout), and one cut off by a partition that drops everything.
func TestFleetRedisFaults(t *testing.T) {
	newClient(t) // skips without the shared Redis
	for _, tc := range []struct {
		name  string
		fault func(*testing.T, *toxitest.Proxy) (remove func())
	}{
		{"Slow", func(t *testing.T, p *toxitest.Proxy) func() { return p.Latency(t, 300*time.Millisecond, 0) }},
		{"Partitioned", func(t *testing.T, p *toxitest.Proxy) func() { return p.Timeout(t, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := toxitest.New(t, services.RedisAddr())
			var heal func()
			outage(t, fastClient(t, p.Addr),
				func() { heal = tc.fault(t, p) },
				func() { heal() })
		})
	}
}
