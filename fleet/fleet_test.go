package fleet_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/fleet/fleettest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var limits = fleet.Limits{Ratio: 0.1, Reserve: 5, Slot: 50 * time.Millisecond, Slots: 20}

func TestLedger(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := fleet.NewLedger(nil)
	steps := []struct {
		name string
		at   time.Duration
		r    fleet.Report
		want fleet.Grant
	}{
		// 100 requests allow 0.1*100 + 5 = 15 retries.
		{"first", 0, fleet.Report{ID: "a", Requests: 100, Delta: 100, Want: 50, Limits: limits}, fleet.Grant{Tokens: 15, Requests: 100, Retries: 15}},
		// The same report again (its answer was lost): no requests are
		// booked twice, the 15 returned are un-booked and granted again.
		{"resent", 10 * time.Millisecond, fleet.Report{ID: "a", Requests: 100, Delta: 100, Returned: 15, Want: 50, Limits: limits}, fleet.Grant{Tokens: 15, Requests: 100, Retries: 15}},
		// Another process finds the budget spent.
		{"spent", 20 * time.Millisecond, fleet.Report{ID: "b", Want: 5, Limits: limits}, fleet.Grant{Tokens: 0, Requests: 100, Retries: 15}},
		// 200 more requests: 30 more retries, 5 wanted.
		{"more", 30 * time.Millisecond, fleet.Report{ID: "b", Requests: 200, Delta: 200, Want: 5, Limits: limits}, fleet.Grant{Tokens: 5, Requests: 300, Retries: 20}},
		// After the window everything is forgotten but the floor; the
		// return of a lease from outside the window un-books nothing.
		{"forgotten", 1100 * time.Millisecond, fleet.Report{ID: "a", Requests: 100, Returned: 15, Want: 50, Limits: limits}, fleet.Grant{Tokens: 5, Requests: 0, Retries: 5}},
	}
	for _, s := range steps {
		if got := l.SyncAt(t0.Add(s.at), s.r); got != s.want {
			t.Errorf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
}

// A report's requests and spent retries are booked over the slots of its
// span, so that they leave the window as they came: half a window later,
// half of them are gone.
func TestLedgerSpreadsSpan(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := fleet.NewLedger(nil)
	lim := fleet.Limits{Ratio: 0.1, Reserve: 5, Slot: 50 * time.Millisecond, Slots: 20}
	g := l.SyncAt(t0, fleet.Report{ID: "a", Requests: 200, Delta: 200, Spent: 20, Span: time.Second, Limits: lim})
	if want := (fleet.Grant{Requests: 200, Retries: 20}); g != want {
		t.Errorf("at the report: %+v, want %+v", g, want)
	}
	g = l.SyncAt(t0.Add(500*time.Millisecond), fleet.Report{ID: "b", Limits: lim})
	if want := (fleet.Grant{Requests: 100, Retries: 10}); g != want {
		t.Errorf("half a window later: %+v, want %+v", g, want)
	}
}

// 50 processes with skewed traffic share one in-memory ledger, in virtual
// time: the fleet's retries stay within its budget.
func TestShareMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fleet.NewLedger(nil)
		r := fleettest.Share(t, 50, 3*time.Second, fleettest.Config(), func(int) fleet.Transport { return l })
		fleettest.CheckShare(t, r)
	})
}

// flaky is a transport that fails while down is set.
type flaky struct {
	l    *fleet.Ledger
	mu   sync.Mutex
	down bool
}

func (f *flaky) set(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }

func (f *flaky) Sync(ctx context.Context, r fleet.Report) (fleet.Grant, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		<-ctx.Done() // a partition: no answer until the timeout
		return fleet.Grant{}, ctx.Err()
	}
	return f.l.Sync(ctx, r)
}

func TestFallbackAndRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &flaky{l: fleet.NewLedger(nil)}
		var mu sync.Mutex
		var states []fleet.State
		cfg := fleettest.Config()
		cfg.OnState = func(s fleet.State, err error) {
			if s == fleet.Fallback && !errors.Is(err, fleet.ErrUnreachable) && !errors.Is(err, fleet.ErrStopped) {
				t.Errorf("fallback error %v does not wrap ErrUnreachable", err)
			}
			mu.Lock()
			states = append(states, s)
			mu.Unlock()
		}
		b, err := fleet.New(cfg, tr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go b.Run(ctx)
		for range 1000 {
			b.Record(budget.Attempt{N: 1})
		}
		time.Sleep(200 * time.Millisecond)
		if b.State() != fleet.Shared {
			t.Fatalf("state %v after 200ms, want shared", b.State())
		}
		tr.set(true)
		cut := time.Now()
		for b.State() == fleet.Shared {
			time.Sleep(time.Millisecond)
		}
		// A quiet process syncs at least every half window less the
		// timeout; the sync fails after the timeout.
		if d := time.Since(cut); d > cfg.Window/2+time.Millisecond {
			t.Errorf("fell back %v after the cut, want within %v", d, cfg.Window/2)
		}
		// In fallback the pacer allows at one instant at most what a
		// hundredth of the window earns at the process's pace, and what
		// is left of the lease: far fewer than 101 retries; none blocks.
		allowed := 0
		for range 1000 {
			if b.Withdraw(failure.Transient) {
				allowed++
			}
		}
		if allowed > 101 {
			t.Errorf("fallback allowed %d retries, want at most 101", allowed)
		}
		tr.set(false)
		healed := time.Now()
		for b.State() != fleet.Shared {
			time.Sleep(time.Millisecond)
		}
		// The next sync comes within one interval and its 10% jitter.
		if most := cfg.SyncInterval + cfg.SyncInterval/10; time.Since(healed) > most+time.Millisecond {
			t.Errorf("back to shared %v after the heal, want within %v", time.Since(healed), most)
		}
		cancel()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []fleet.State{fleet.Shared, fleet.Fallback, fleet.Shared, fleet.Fallback}
		if len(states) != len(want) || states[0] != want[0] || states[1] != want[1] || states[2] != want[2] || states[3] != want[3] {
			t.Errorf("states %v, want %v", states, want)
		}
	})
}

func TestWithdrawPermanent(t *testing.T) {
	b, err := fleet.New(fleet.Config{}, fleet.NewLedger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if b.Withdraw(failure.Permanent) {
		t.Error("a permanent failure was allowed a retry")
	}
}

// Budgets without an ID draw their own: 16 hex digits, different for
// each budget.
func TestDefaultIDsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		b, err := fleet.New(fleet.Config{}, fleet.NewLedger(nil))
		if err != nil {
			t.Fatal(err)
		}
		id := b.ID()
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("default ID %q: want 16 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("default ID %q drawn twice", id)
		}
		seen[id] = true
	}
}

func TestValidate(t *testing.T) {
	for name, c := range map[string]fleet.Config{
		"window":   {Window: 1500 * time.Microsecond},
		"interval": {Window: time.Second, SyncInterval: 600 * time.Millisecond},
		"negative": {Timeout: -1},
		"ratio":    {Ratio: -1},
	} {
		if err := c.Validate(); !errors.Is(err, budget.ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig", name, err)
		}
	}
}

// A budget whose Run stops gives its unused lease back: another process
// finds the fleet's retries of the window down by the returned tokens.
func TestStopReturnsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fleet.NewLedger(nil)
		b, err := fleet.New(fleet.Config{}, l)
		if err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			b.Record(budget.Attempt{N: 1})
		}
		_ = b.Sync(context.Background())
		for range 300 {
			// Refusals for want of tokens (the pacer allows one retry
			// per 100 ms) make the next lease larger.
			b.Withdraw(failure.Transient)
			time.Sleep(10 * time.Millisecond)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { b.Run(ctx); close(done) }()
		synctest.Wait()
		held := b.Stats().Lease
		cancel()
		<-done
		if b.State() != fleet.Fallback {
			t.Errorf("state %v after Run returned, want fallback", b.State())
		}
		g := l.SyncAt(time.Now(), fleet.Report{ID: "other", Limits: fleet.Limits{Ratio: 0.1, Reserve: 100, Slot: 500 * time.Millisecond, Slots: fleet.Slots}})
		// 1000 requests allow 200 retries; one was used.
		if held < 10 || g.Retries != 1 {
			t.Errorf("held %d tokens; after the return the window holds %d retries, want 1", held, g.Retries)
		}
	})
}
