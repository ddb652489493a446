// Package fleettest runs the same tests over every fleet.Transport: the
// in-memory ledger, Redis standalone and Redis Cluster. It paces traffic
// with the time package, so it runs in real time against a real server
// and in virtual time inside a testing/synctest bubble.
package fleettest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/fleet"
)

// Config is the fleet configuration the tests use: a 1 s window synced
// every 50 ms, so that a test lasts seconds.
func Config() fleet.Config {
	return fleet.Config{Ratio: 0.1, MinPerSecond: 5, Window: time.Second, SyncInterval: 50 * time.Millisecond, Timeout: 100 * time.Millisecond}
}

// ShareResult is what Share measured.
type ShareResult struct {
	// Requests and Retries are the fleet's first attempts and the retries
	// its budgets allowed while every budget was Shared, after the first
	// window.
	Requests, Retries int64
	// Share is Retries / Requests.
	Share float64
	// Bound is the most the budget allows over the measured span:
	// Ratio * Requests + Reserve * (span / Window).
	Bound float64
	// Syncs counts the syncs of every budget; Calls the requests and
	// retries tried over the whole run.
	Syncs, Calls int64
}

// Share runs n budgets on transports from newTransport with skewed
// traffic (process i sends 40/(i+1) requests every 5 ms, at least one),
// in which every request fails and asks for one retry, for 1 s of warm-up
// and then span. It returns the retry share measured after the warm-up.
func Share(t testing.TB, n int, span time.Duration, cfg fleet.Config, newTransport func(i int) fleet.Transport) ShareResult {
	t.Helper()
	buds := make([]*fleet.Budget, n)
	for i := range buds {
		b, err := fleet.New(cfg, newTransport(i))
		if err != nil {
			t.Fatal(err)
		}
		buds[i] = b
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, b := range buds {
		wg.Go(func() { b.Run(ctx) })
	}
	var measuring atomic.Bool
	var requests, retries, calls atomic.Int64
	warm := cfg.Window
	if warm == 0 {
		warm = budget.DefaultWindow
	}
	start := time.Now()
	var traffic sync.WaitGroup
	for i, b := range buds {
		per := max(40/(i+1), 1)
		traffic.Go(func() {
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for time.Since(start) < warm+span {
				<-tick.C
				m := measuring.Load() && b.State() == fleet.Shared
				for range per {
					b.Record(budget.Attempt{N: 1, Failed: true})
					ok := b.Withdraw(failure.Transient)
					if ok {
						b.Record(budget.Attempt{N: 2, Failed: true, Charged: failure.Transient})
					}
					calls.Add(1)
					if m {
						requests.Add(1)
						if ok {
							retries.Add(1)
						}
					}
				}
			}
		})
	}
	time.Sleep(warm)
	measuring.Store(true)
	traffic.Wait()
	cancel()
	wg.Wait()
	var r ShareResult
	for _, b := range buds {
		r.Syncs += b.Stats().Syncs
	}
	r.Requests, r.Retries, r.Calls = requests.Load(), retries.Load(), calls.Load()
	if r.Requests > 0 {
		r.Share = float64(r.Retries) / float64(r.Requests)
	}
	ratio, reserve := cfg.Ratio, cfg.MinPerSecond
	if ratio == 0 {
		ratio = budget.DefaultRatio
	}
	if cfg.NoFloor {
		reserve = 0
	}
	r.Bound = ratio*float64(r.Requests) + reserve*span.Seconds()
	return r
}

// CheckShare fails t unless r keeps the fleet within its budget, with a
// tolerance of 10% of the bound: the window slides in twentieths, so a
// lease can leave the window up to 5% early, and the requests a process
// reports at a sync may have been counted just after the measurement
// began. It also fails when the fleet got less than half its budget,
// which would mean that leases strand the allowance.
func CheckShare(t testing.TB, r ShareResult) {
	t.Helper()
	t.Logf("requests %d, retries %d, share %.4f, bound %.0f retries (%.4f), %d syncs for %d calls (%.1f round trips per 10,000 calls)",
		r.Requests, r.Retries, r.Share, r.Bound, r.Bound/float64(max(r.Requests, 1)), r.Syncs, r.Calls, float64(r.Syncs)*1e4/float64(max(r.Calls, 1)))
	if r.Requests == 0 {
		t.Fatal("no requests measured: the budgets never became Shared")
	}
	if float64(r.Retries) > 1.1*r.Bound {
		t.Errorf("fleet retried %d times, more than 1.1 x its bound of %.0f", r.Retries, r.Bound)
	}
	if float64(r.Retries) < 0.5*r.Bound {
		t.Errorf("fleet retried only %d times, less than half its bound of %.0f", r.Retries, r.Bound)
	}
}

// Traffic is one goroutine's share of a budget benchmark run under
// b.RunParallel: 19 calls in 20 succeed at once; the 20th fails, withdraws
// a retry and, if the budget allows it, succeeds on it. One pb.Next is
// one call. It returns the retries the budget granted and refused.
func Traffic(b budget.Budget, pb *testing.PB) (granted, refused int64) {
	i := 0
	for pb.Next() {
		i++
		if i%20 != 0 {
			b.Record(budget.Attempt{N: 1})
			continue
		}
		b.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
		if b.Withdraw(failure.Transient) {
			b.Record(budget.Attempt{N: 2, Charged: failure.Transient})
			granted++
		} else {
			refused++
		}
	}
	return granted, refused
}
