package e2e_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/draws"
	"github.com/unherd/unherd/internal/services"
	"github.com/unherd/unherd/unherdredis"
)

// The fleet of the outage run: 8 processes with the default budget (10%
// of the requests of the last 10 s, plus 10 retries per second for the
// fleet, synced every second), each sending 160 requests a second that
// all fail and ask for a retry, so that the fleet wants far more retries
// than its share of 0.1 * 1280 + 10 = 138 a second. Redis dies after
// the first window and comes back, empty, 10 s later.
const (
	fleetProcs  = 8
	fleetRate   = 160                   // requests per second per process
	fleetTick   = 25 * time.Millisecond // requests go out in batches of fleetRate/40
	fleetKill   = 12 * time.Second      // plus each run's offset
	fleetOutage = 10 * time.Second
	fleetEnd    = 30 * time.Second
	// fleetFrom is the first second checked: the processes' first
	// syncs, and their first measure of their request rates, come in
	// the first second.
	fleetFrom = 2
	// fleetTolerance is how far a second may stray from the share.
	fleetTolerance = 1.25
)

// fleetSecond is what the fleet did in one second of the run.
type fleetSecond struct {
	requests, retries atomic.Int64
	shared, fallback  atomic.Int64 // processes' states, sampled at each batch
}

// TestFleetBudgetRedisKilled runs 8 fleet budgets, each with its own
// Redis client (8 processes in one), on a redis-server that the test
// kills mid-run and starts again, empty, 10 s later: two runs at once,
// each on a server of its own, killed at different instants of a second,
// with the budgets' random draws seeded differently. Every whole second
// from the 2nd on, through the death and the return, the retries the
// fleet admitted are within 1.25x of its share (0.1 * that second's
// requests + 10), above and below. It prints each run's per-second
// timeline. It lasts 30 s; -short skips it.
func TestFleetBudgetRedisKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: the fleet budget's Redis outage run lasts 30 s; run without -short")
	}
	for run, offset := range []time.Duration{300 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(fmt.Sprint("run", run+1), func(t *testing.T) {
			t.Parallel()
			fleetOutageRun(t, uint64(run+1), fleetKill+offset)
		})
	}
}

func fleetOutageRun(t *testing.T, seed uint64, kill time.Duration) {
	restart := kill + fleetOutage
	s := services.StartRedis(t)
	prefix := fmt.Sprintf("unherd:e2e:fleet:%d:", time.Now().UnixNano())
	buds := make([]*unherdredis.Budget, fleetProcs)
	for i := range buds {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: 100 * time.Millisecond,
			ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, PoolSize: 4})
		t.Cleanup(func() { _ = c.Close() })
		cfg := unherdredis.BudgetConfig{Prefix: prefix}
		cfg.Rand = draws.NewSeeded(seed, uint64(i))
		b, err := unherdredis.NewBudget(c, "outage", cfg)
		if err != nil {
			t.Fatal(err)
		}
		buds[i] = b
	}
	defer func() {
		for _, b := range buds {
			_ = b.Close()
		}
	}()

	seconds := make([]fleetSecond, int(fleetEnd/time.Second)+1)
	start := time.Now()
	var wg sync.WaitGroup
	for _, b := range buds {
		wg.Go(func() {
			tick := time.NewTicker(fleetTick)
			defer tick.Stop()
			per := int(fleetRate * fleetTick / time.Second)
			for {
				now := <-tick.C
				at := now.Sub(start)
				if at >= fleetEnd {
					return
				}
				sec := &seconds[int(at/time.Second)]
				switch b.State() {
				case fleet.Shared:
					sec.shared.Add(1)
				default:
					sec.fallback.Add(1)
				}
				for range per {
					b.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
					sec.requests.Add(1)
					if b.Withdraw(failure.Transient) {
						sec.retries.Add(1)
						b.Record(budget.Attempt{N: 2, Failed: true, Class: failure.Transient, Charged: failure.Transient})
					}
				}
			}
		})
	}
	events := map[int]string{}
	timer := time.NewTimer(time.Until(start.Add(kill)))
	<-timer.C
	s.Kill()
	events[int(kill/time.Second)] = "Redis killed"
	timer.Reset(time.Until(start.Add(restart)))
	<-timer.C
	s.Start()
	events[int(restart/time.Second)] = "Redis started again, empty"
	loops := make(chan struct{})
	go func() {
		wg.Wait()
		close(loops)
	}()
	await.Recv(t, loops, "the budgets' request loops to reach the run's end")

	var lines []string
	bad, most := 0, 0.0
	for i := range int(fleetEnd / time.Second) {
		sec := &seconds[i]
		req, ret := sec.requests.Load(), sec.retries.Load()
		share := budget.DefaultRatio*float64(req) + budget.DefaultMinPerSecond
		ratio := float64(ret) / share
		mark := ""
		if i >= fleetFrom {
			most = max(most, ratio, 1/max(ratio, 1e-9))
			if ratio > fleetTolerance || ratio < 1/fleetTolerance {
				mark = "  <- out of bounds"
				bad++
			}
		}
		lines = append(lines, fmt.Sprintf("%3d s  requests %5d  share %6.1f  admitted %5d  %5.2fx  shared/fallback batches %3d/%3d  %s%s",
			i, req, share, ret, ratio, sec.shared.Load(), sec.fallback.Load(), events[i], mark))
	}
	t.Logf("killed at %v, started again at %v; admitted retries per second (seconds before %d are the warm-up, not checked; farthest from the share: %.2fx):\n%s",
		kill, restart, fleetFrom, most, strings.Join(lines, "\n"))
	if bad > 0 {
		t.Errorf("%d seconds from the %dth on admitted retries outside 1/%.2f to %.2f times the share", bad, fleetFrom, fleetTolerance, fleetTolerance)
	}
}
