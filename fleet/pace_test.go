package fleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/fleet"
)

// outage is a transport whose ledger can die (every sync times out) and
// come back empty, as a Redis restarted without persistence does.
type outage struct {
	mu   sync.Mutex
	l    *fleet.Ledger
	down bool
}

func (o *outage) kill() { o.mu.Lock(); o.down = true; o.mu.Unlock() }

func (o *outage) restart() {
	o.mu.Lock()
	o.down, o.l = false, fleet.NewLedger(nil)
	o.mu.Unlock()
}

func (o *outage) Sync(ctx context.Context, r fleet.Report) (fleet.Grant, error) {
	o.mu.Lock()
	down, l := o.down, o.l
	o.mu.Unlock()
	if down {
		<-ctx.Done()
		return fleet.Grant{}, ctx.Err()
	}
	return l.Sync(ctx, r)
}

// lockedSource is a seeded source safe for concurrent use.
type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (l *lockedSource) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Uint64()
}

// fleetRun is what a fleet of budgets admitted, second by second.
type fleetRun struct {
	requests, retries []int64
	shared, fallback  []int64 // batches sent in each state
}

// share is the fleet's share of retries in second i: 10% of its requests
// plus the floor of 10.
func (f *fleetRun) share(i int) float64 { return 0.1*float64(f.requests[i]) + 10 }

func (f *fleetRun) String() string {
	var sb strings.Builder
	for i := range f.requests {
		fmt.Fprintf(&sb, "%3d s  requests %5d  share %6.1f  admitted %5d  %5.2fx  shared/fallback batches %3d/%3d\n",
			i, f.requests[i], f.share(i), f.retries[i], float64(f.retries[i])/f.share(i), f.shared[i], f.fallback[i])
	}
	return sb.String()
}

// runFleet runs procs budgets with the default configuration over tr, in
// virtual time, each sending rate requests a second in batches every
// 25 ms, all failing and asking for a retry, for end; at each instant of
// events it calls the function. Call it inside a synctest bubble.
func runFleet(t *testing.T, procs, rate int, end time.Duration, seed uint64, tr fleet.Transport, events map[time.Duration]func()) *fleetRun {
	t.Helper()
	n := int(end / time.Second)
	f := &fleetRun{requests: make([]int64, n), retries: make([]int64, n), shared: make([]int64, n), fallback: make([]int64, n)}
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	var runs, traffic sync.WaitGroup
	start := time.Now()
	for i := range procs {
		b, err := fleet.New(fleet.Config{ID: fmt.Sprint("p", i), Rand: &lockedSource{src: rand.NewPCG(seed, uint64(i))}}, tr)
		if err != nil {
			t.Fatal(err)
		}
		runs.Go(func() { b.Run(ctx) })
		// Each process starts its traffic at a phase of its own.
		phase := time.Duration(i) * 25 * time.Millisecond / time.Duration(procs)
		traffic.Go(func() {
			time.Sleep(phase)
			tick := time.NewTicker(25 * time.Millisecond)
			defer tick.Stop()
			per := rate / 40
			for {
				at := time.Since(start)
				if at >= end {
					return
				}
				sec := int(at / time.Second)
				admitted := 0
				for range per {
					b.Record(budget.Attempt{N: 1, Failed: true, Class: budget.Transient})
					if b.Withdraw(budget.Transient) {
						admitted++
						b.Record(budget.Attempt{N: 2, Failed: true, Class: budget.Transient, Charged: budget.Transient})
					}
				}
				mu.Lock()
				f.requests[sec] += int64(per)
				f.retries[sec] += int64(admitted)
				if b.State() == fleet.Shared {
					f.shared[sec]++
				} else {
					f.fallback[sec]++
				}
				mu.Unlock()
				<-tick.C
			}
		})
	}
	for at, do := range events {
		go func() {
			time.Sleep(at)
			do()
		}()
	}
	traffic.Wait()
	cancel()
	runs.Wait()
	return f
}

// 8 processes share the default budget (10% of the requests of the last
// 10 s plus 10 retries a second) through a ledger that dies 22.5 s in
// and comes back empty 10 s later. Every second from the second on,
// through the death and the return, the fleet admits within 1.25x of its
// share, above and below: no burst when the fallback starts, none when
// the ledger comes back, none when the first window's grants leave it.
func TestFleetPacedThroughOutage(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &outage{l: fleet.NewLedger(nil)}
				kill := 22*time.Second + time.Duration(seed)*200*time.Millisecond
				f := runFleet(t, 8, 160, 45*time.Second, seed, tr, map[time.Duration]func(){
					kill:                  tr.kill,
					kill + 10*time.Second: tr.restart,
				})
				bad := 0
				for i := 2; i < len(f.requests); i++ {
					if r := float64(f.retries[i]) / f.share(i); r > 1.25 || r < 1/1.25 {
						bad++
					}
				}
				if bad > 0 || testing.Verbose() {
					t.Logf("killed at %v, back at %v:\n%s", kill, kill+10*time.Second, f)
				}
				if bad > 0 {
					t.Errorf("%d seconds outside 1/1.25 to 1.25 times the share", bad)
				}
			})
		})
	}
}
