package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/internal/draws"
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

// traffic is how a test's fleet calls: procs processes, each sending per
// requests every period (from a phase of its own), that succeed before
// failFrom and all fail from then on, each failure asking for a retry,
// until end.
type traffic struct {
	procs    int
	per      int
	period   time.Duration
	failFrom time.Duration
	end      time.Duration
}

// busy is the outage test's traffic: 8 processes sending 160 requests a
// second in batches every 25 ms, all failing.
var busy = traffic{procs: 8, per: 4, period: 25 * time.Millisecond, end: 45 * time.Second}

// runFleet runs tr.procs budgets with the default configuration over tr,
// in virtual time, each seeded from seed, calling at each instant of
// events its function. Call it inside a synctest bubble.
func runFleet(t *testing.T, tf traffic, seed uint64, tr fleet.Transport, events map[time.Duration]func()) *fleetRun {
	t.Helper()
	n := int(tf.end / time.Second)
	f := &fleetRun{requests: make([]int64, n), retries: make([]int64, n), shared: make([]int64, n), fallback: make([]int64, n)}
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	var runs, traffic sync.WaitGroup
	start := time.Now()
	for i := range tf.procs {
		b, err := fleet.New(fleet.Config{ID: fmt.Sprint("p", i), Rand: draws.NewSeeded(seed, uint64(i))}, tr)
		if err != nil {
			t.Fatal(err)
		}
		runs.Go(func() { b.Run(ctx) })
		// Each process starts its traffic at a phase of its own.
		phase := time.Duration(i) * tf.period / time.Duration(tf.procs)
		traffic.Go(func() {
			time.Sleep(phase)
			tick := time.NewTicker(tf.period)
			defer tick.Stop()
			for {
				at := time.Since(start)
				if at >= tf.end {
					return
				}
				sec := int(at / time.Second)
				admitted := 0
				for range tf.per {
					if at < tf.failFrom {
						b.Record(budget.Attempt{N: 1})
						continue
					}
					b.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
					if b.Withdraw(failure.Transient) {
						admitted++
						b.Record(budget.Attempt{N: 2, Failed: true, Class: failure.Transient, Charged: failure.Transient})
					}
				}
				mu.Lock()
				f.requests[sec] += int64(tf.per)
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
				f := runFleet(t, busy, seed, tr, map[time.Duration]func(){
					kill:                  tr.kill,
					kill + 10*time.Second: tr.restart,
				})
				f.check(t, 2, fmt.Sprintf("killed at %v, back at %v", kill, kill+10*time.Second))
			})
		})
	}
}

// check fails t unless every second from the from-th on admitted within
// 1/1.25 to 1.25 times the share; it logs the timeline when it fails or
// the test is verbose.
func (f *fleetRun) check(t *testing.T, from int, what string) {
	t.Helper()
	bad := 0
	for i := from; i < len(f.requests); i++ {
		if r := float64(f.retries[i]) / f.share(i); r > 1.25 || r < 1/1.25 {
			bad++
		}
	}
	if bad > 0 || testing.Verbose() {
		t.Logf("%s:\n%s", what, f)
	}
	if bad > 0 {
		t.Errorf("%d seconds from the %dth on outside 1/1.25 to 1.25 times the share", bad, from)
	}
}

// Shared: two processes whose calls succeed for a whole window (which
// saves a window's retries in the ledger) and then all fail. The fleet's
// retries rise to its share in the first second and stay there: no burst
// of the window's savings.
func TestPaceShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &outage{l: fleet.NewLedger(nil)}
		tf := traffic{procs: 2, per: 25, period: 25 * time.Millisecond, failFrom: 12 * time.Second, end: 18 * time.Second}
		f := runFleet(t, tf, 1, tr, nil)
		f.check(t, 12, "calls fail from 12 s on")
	})
}

// Fallback: the ledger dies 12.3 s into a run in which every call fails.
// The processes spend what is left of their leases, then their fallback,
// paced at the share they had: no burst of the fallback's full window,
// and no starvation after it.
func TestPaceFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &outage{l: fleet.NewLedger(nil)}
		tf := traffic{procs: 2, per: 25, period: 25 * time.Millisecond, end: 24 * time.Second}
		f := runFleet(t, tf, 2, tr, map[time.Duration]func(){12300 * time.Millisecond: tr.kill})
		f.check(t, 2, "ledger dead from 12.3 s on")
	})
}

// Return: the ledger dies 5.3 s in and comes back empty 10 s later. The
// processes report the retries their fallback made, and stay paced: no
// burst of the empty ledger's floor and 10% of the outage's requests.
func TestPaceReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &outage{l: fleet.NewLedger(nil)}
		tf := traffic{procs: 2, per: 25, period: 25 * time.Millisecond, end: 24 * time.Second}
		f := runFleet(t, tf, 3, tr, map[time.Duration]func(){5300 * time.Millisecond: tr.kill, 15300 * time.Millisecond: tr.restart})
		f.check(t, 2, "ledger dead from 5.3 s, back empty at 15.3 s")
		g := tr.l.SyncAt(time.Now(), fleet.Report{ID: "probe", Limits: fleet.Limits{Ratio: 0.1, Reserve: 100, Slot: 500 * time.Millisecond, Slots: fleet.Slots}})
		// The fleet retried about 230 times a second since the return:
		// the window holds them, not an empty ledger's grants alone.
		if g.Retries < 1500 {
			t.Errorf("the returned ledger's window holds %d retries 8.7 s after the return, want at least 1500", g.Retries)
		}
	})
}

// Slow processes: 2000 processes sending one request a second each (210
// retries a second for the fleet), whose calls succeed for a whole window
// and then fail. A slow process holds a token only as often as its pace
// allows, so the fleet does not spend one token per process in the first
// second of the failures.
func TestPaceSlowProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &outage{l: fleet.NewLedger(nil)}
		tf := traffic{procs: 2000, per: 1, period: time.Second, failFrom: 12 * time.Second, end: 20 * time.Second}
		f := runFleet(t, tf, 4, tr, nil)
		f.check(t, 12, "calls fail from 12 s on")
	})
}
