package budget

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/swarm"
)

// withdrawAll withdraws until the budget refuses, and returns how many it
// allowed.
func withdrawAll(b *Concurrency) int {
	n := 0
	for b.Withdraw(failure.Transient) {
		n++
		if n > 1000 {
			break
		}
	}
	return n
}

// Envoy's documented example of its retry budget (PR 9069, the
// retry_budget docs): at 20% with a minimum retry concurrency of 3, 25
// active requests allow 5 active retries, and 2 active requests still
// allow 3.
func TestConcurrencyEnvoyExample(t *testing.T) {
	for _, tt := range []struct{ attempts, retries int }{{25, 5}, {2, 3}, {0, 3}, {100, 20}, {19, 3}, {20, 4}} {
		b := configtest.Must(NewConcurrency(ConcurrencyConfig{}))(t)
		for range tt.attempts {
			b.Start(Attempt{N: 1})
		}
		if got := withdrawAll(b); got != tt.retries {
			t.Errorf("%d attempts in flight: %d retries allowed, want %d", tt.attempts, got, tt.retries)
		}
	}
}

// failsafe-go issue 139 (and its pull request 140): the budget's minimum
// concurrency was not honoured (with a rate of 0.001 and a minimum of 3,
// the second retry was refused), and attempts in flight were not counted
// apart from retries. Here the minimum allows 3 retries with nothing
// else in flight, and the ratio applies to every attempt in flight, the
// retries' own included.
func TestConcurrencyFailsafeGo139(t *testing.T) {
	b := configtest.Must(NewConcurrency(ConcurrencyConfig{Ratio: 0.001, MinRetries: 3}))(t)
	if got := withdrawAll(b); got != 3 {
		t.Errorf("rate 0.001, minimum 3, nothing in flight: %d retries allowed, want 3", got)
	}
	b = configtest.Must(NewConcurrency(ConcurrencyConfig{Ratio: 0.5, MinRetries: -1}))(t)
	if b.Withdraw(failure.Transient) {
		t.Error("no minimum, nothing in flight: a retry was allowed")
	}
	for range 4 {
		b.Start(Attempt{N: 1})
	}
	if got := withdrawAll(b); got != 2 {
		t.Errorf("ratio 0.5, 4 first attempts in flight: %d retries allowed, want 2", got)
	}
	b.Start(Attempt{N: 2})
	b.Start(Attempt{N: 2})
	// 6 attempts in flight (2 of them the retries), 2 retries: one more.
	if got := withdrawAll(b); got != 1 {
		t.Errorf("ratio 0.5, 6 attempts in flight, 2 retries: %d more allowed, want 1", got)
	}
}

// Every way a retry ends gives its place back: its attempt's Record or
// Abandon, or a Refund when it is not made.
func TestConcurrencyLifecycle(t *testing.T) {
	b := configtest.Must(NewConcurrency(ConcurrencyConfig{MinRetries: 1}))(t)
	check := func(step string, attempts, retries int) {
		t.Helper()
		if a, r := b.InFlight(); a != attempts || r != retries {
			t.Fatalf("%s: %d attempts and %d retries in flight, want %d and %d", step, a, r, attempts, retries)
		}
	}
	b.Start(Attempt{N: 1})
	b.Record(Attempt{N: 1, Failed: true, Class: failure.Transient})
	check("first attempt failed", 0, 0)
	if !b.Withdraw(failure.Transient) || b.Withdraw(failure.Transient) {
		t.Fatal("the minimum of 1 did not allow exactly one retry")
	}
	check("retry allowed", 0, 1)
	b.Start(Attempt{N: 2, Charged: failure.Transient})
	check("retry started", 1, 1)
	b.Record(Attempt{N: 2, Charged: failure.Transient})
	check("retry succeeded", 0, 0)
	b.Withdraw(failure.Transient)
	b.Refund(failure.Transient)
	check("retry refunded", 0, 0)
	b.Withdraw(failure.Transient)
	b.Start(Attempt{N: 2})
	b.Abandon(Attempt{N: 2})
	check("retry abandoned", 0, 0)
	b.Start(Attempt{N: 1})
	b.Abandon(Attempt{N: 1})
	check("first attempt abandoned", 0, 0)
}

// Looping callers, each with at most one attempt in flight, cannot hold
// more retries in flight than the budget's bound for their number, and
// leave nothing counted when they stop.
func TestConcurrencyBoundedUnderLoopingCallers(t *testing.T) {
	const g, ops = 50, 4000
	b := configtest.Must(NewConcurrency(ConcurrencyConfig{}))(t)
	bound := max(DefaultMinRetryConcurrency, int(math.Floor(DefaultConcurrencyRatio*g)))
	var (
		done  atomic.Bool
		worst atomic.Int64
	)
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		for !done.Load() {
			if _, r := b.InFlight(); int64(r) > worst.Load() {
				worst.Store(int64(r))
			}
		}
	}()
	swarm.Seeded(t, g, 11, func(r *rand.Rand) {
		for range ops {
			b.Start(Attempt{N: 1})
			if r.IntN(2) == 0 {
				b.Record(Attempt{N: 1})
				continue
			}
			b.Record(Attempt{N: 1, Failed: true, Class: failure.Transient})
			for n := 2; n <= 4 && b.Withdraw(failure.Transient); n++ {
				if _, rs := b.InFlight(); int64(rs) > worst.Load() {
					worst.Store(int64(rs)) // a racy max, low at worst
				}
				runtime.Gosched() // let the others run while this retry is in flight
				switch r.IntN(4) {
				case 0:
					b.Refund(failure.Transient) // a guard rejected it
					n = 5
				case 1:
					b.Start(Attempt{N: n})
					b.Abandon(Attempt{N: n}) // the caller gave up
					n = 5
				case 2:
					b.Start(Attempt{N: n})
					b.Record(Attempt{N: n})
					n = 5
				default:
					b.Start(Attempt{N: n})
					b.Record(Attempt{N: n, Failed: true, Class: failure.Transient})
				}
			}
		}
	})
	done.Store(true)
	await.Recv(t, watcher, "the watcher of the retries in flight to stop")
	if w := worst.Load(); w > int64(bound) {
		t.Errorf("%d retries in flight at once, want at most %d for %d callers", w, bound, g)
	}
	if a, r := b.InFlight(); a != 0 || r != 0 {
		t.Errorf("after the callers stopped: %d attempts and %d retries in flight, want none", a, r)
	}
	t.Logf("%d looping callers: at most %d retries in flight (bound %d)", g, worst.Load(), bound)
}

func TestConcurrencyAllocs(t *testing.T) {
	b := configtest.Must(NewConcurrency(ConcurrencyConfig{}))(t)
	allocs := testing.AllocsPerRun(1000, func() {
		b.Start(Attempt{N: 1})
		b.Record(Attempt{N: 1, Failed: true})
		if b.Withdraw(failure.Transient) {
			b.Start(Attempt{N: 2})
			b.Record(Attempt{N: 2})
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
}

func TestConcurrencyValidate(t *testing.T) {
	for _, r := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1)} {
		if _, err := NewConcurrency(ConcurrencyConfig{Ratio: r}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Ratio %v: %v, want ErrInvalidConfig", r, err)
		}
	}
	if _, err := NewConcurrency(ConcurrencyConfig{Ratio: 1, MinRetries: -5}); err != nil {
		t.Errorf("Ratio 1, no minimum: %v", err)
	}
}
