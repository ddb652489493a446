package hedge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/swarm"
	"github.com/unherd/unherd/internal/tally"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

var (
	errBoom = errors.New("boom")
	errA    = errors.New("first failure")
	errB    = errors.New("second failure")
)

const ms = time.Millisecond

func TestDo(t *testing.T) {
	nonFatal := func(error) bool { return true }
	tests := []struct {
		name      string
		cfg       Config // Delay is 10ms unless set
		wait      bool   // DoFirstSuccess instead of Do
		allow     int    // budget withdrawals allowed; -1 for all
		outcomes  []outcome
		want      int
		wantErr   error
		wantAt    time.Duration         // when Do returns
		started   map[int]time.Duration // attempt -> start time
		lost      []int                 // attempts that must see ErrLost
		withdrawn int
	}{
		{
			name: "primary answers before the delay", allow: -1,
			outcomes: []outcome{{after: 5 * ms, value: 1}, {after: 5 * ms, value: 2}},
			want:     1, wantAt: 5 * ms, started: map[int]time.Duration{0: 0},
		},
		{
			name: "hedge wins and the primary is cancelled", allow: -1,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 5 * ms, value: 2}},
			want:     2, wantAt: 15 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms},
			lost: []int{0}, withdrawn: 1,
		},
		{
			name: "primary wins after the hedge started", allow: -1,
			outcomes: []outcome{{after: 12 * ms, value: 1}, {after: 50 * ms, value: 2}},
			want:     1, wantAt: 12 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms},
			lost: []int{1}, withdrawn: 1,
		},
		{
			name: "budget refuses the hedge", allow: 0,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 5 * ms, value: 2}},
			want:     1, wantAt: 100 * ms, started: map[int]time.Duration{0: 0},
		},
		{
			// failsafe-go issue 141: an exhausted hedge budget failed the
			// whole execution and cancelled the requests already running.
			// Here the budget refuses the second hedge only: the primary
			// and the first hedge go on, and the first to answer wins.
			name: "failsafe-go 141: a refused hedge leaves the running ones", cfg: Config{MaxHedges: 2}, allow: 1,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 50 * ms, value: 2}, {after: 5 * ms, value: 3}},
			want:     2, wantAt: 60 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms},
			lost: []int{0}, withdrawn: 1,
		},
		{
			name: "two hedges one delay apart", cfg: Config{MaxHedges: 2}, allow: -1,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 100 * ms, value: 2}, {after: 5 * ms, value: 3}},
			want:     3, wantAt: 25 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms, 2: 20 * ms},
			lost: []int{0, 1}, withdrawn: 2,
		},
		{
			name: "fatal error settles the call at once", allow: -1,
			outcomes: []outcome{{after: 15 * ms, err: errBoom}, {after: 50 * ms, value: 2}},
			wantErr:  errBoom, wantAt: 15 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms},
			lost: []int{1}, withdrawn: 1,
		},
		{
			name: "fatal primary error before the delay starts nothing", allow: -1,
			outcomes: []outcome{{after: 3 * ms, err: errBoom}, {after: 5 * ms, value: 2}},
			wantErr:  errBoom, wantAt: 3 * ms, started: map[int]time.Duration{0: 0},
		},
		{
			name: "non-fatal error starts the hedge at once", cfg: Config{NonFatal: nonFatal}, allow: -1,
			outcomes: []outcome{{after: 3 * ms, err: errA}, {after: 5 * ms, value: 2}},
			want:     2, wantAt: 8 * ms, started: map[int]time.Duration{0: 0, 1: 3 * ms}, withdrawn: 1,
		},
		{
			name: "all attempts fail non-fatally: the last error", cfg: Config{NonFatal: nonFatal}, allow: -1,
			outcomes: []outcome{{after: 3 * ms, err: errA}, {after: 4 * ms, err: errB}},
			wantErr:  errB, wantAt: 7 * ms, started: map[int]time.Duration{0: 0, 1: 3 * ms}, withdrawn: 1,
		},
		{
			name: "non-fatal primary error waits for the running hedge", cfg: Config{NonFatal: nonFatal}, allow: -1,
			outcomes: []outcome{{after: 15 * ms, err: errA}, {after: 10 * ms, err: errB}},
			wantErr:  errB, wantAt: 20 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms}, withdrawn: 1,
		},
		{
			name: "non-fatal error with the budget empty fails at once", cfg: Config{NonFatal: nonFatal}, allow: 0,
			outcomes: []outcome{{after: 3 * ms, err: errA}, {after: 5 * ms, value: 2}},
			wantErr:  errA, wantAt: 3 * ms, started: map[int]time.Duration{0: 0},
		},
		{
			name: "non-fatal hedge error runs the next hedge on its goroutine", cfg: Config{NonFatal: nonFatal, MaxHedges: 2}, allow: -1,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 2 * ms, err: errA}, {after: 5 * ms, value: 3}},
			want:     3, wantAt: 17 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms, 2: 12 * ms},
			lost: []int{0}, withdrawn: 2,
		},
		{
			name: "failures wait: a fatal primary error waits for the hedge, which wins", wait: true, allow: -1,
			outcomes: []outcome{{after: 15 * ms, err: errBoom}, {after: 10 * ms, value: 2}},
			want:     2, wantAt: 20 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms}, withdrawn: 1,
		},
		{
			name: "failures wait: a failed hedge does not cancel the primary", wait: true, allow: -1,
			outcomes: []outcome{{after: 30 * ms, value: 1}, {after: 2 * ms, err: errBoom}},
			want:     1, wantAt: 30 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms}, withdrawn: 1,
		},
		{
			name: "failures wait: all fail fatally, the last error", wait: true, allow: -1,
			outcomes: []outcome{{after: 15 * ms, err: errA}, {after: 10 * ms, err: errB}},
			wantErr:  errB, wantAt: 20 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms}, withdrawn: 1,
		},
		{
			name: "failures wait: a primary error before the delay starts nothing", wait: true, allow: -1,
			outcomes: []outcome{{after: 3 * ms, err: errBoom}, {after: 5 * ms, value: 2}},
			wantErr:  errBoom, wantAt: 3 * ms, started: map[int]time.Duration{0: 0},
		},
		// With NonFatal set, DoFirstSuccess follows Do's rule (gRPC's
		// hedging, proposal A6): a non-fatal error starts the next hedge at
		// once, and a fatal one settles the call at once.
		{
			name: "failures wait, NonFatal set: a non-fatal error while another runs starts the next hedge at once", wait: true,
			cfg: Config{NonFatal: nonFatal, MaxHedges: 2}, allow: -1,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 2 * ms, err: errA}, {after: 5 * ms, value: 3}},
			want:     3, wantAt: 17 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms, 2: 12 * ms},
			lost: []int{0}, withdrawn: 2,
		},
		{
			name: "failures wait, NonFatal set: a non-fatal failure starts the next hedge at once", wait: true,
			cfg: Config{NonFatal: nonFatal, MaxHedges: 2}, allow: -1,
			outcomes: []outcome{{after: 15 * ms, err: errA}, {after: 7 * ms, err: errB}, {after: 3 * ms, value: 3}},
			want:     3, wantAt: 18 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms, 2: 15 * ms}, withdrawn: 2,
		},
		{
			name: "failures wait, NonFatal set: a fatal error while another runs settles the call", wait: true,
			cfg: Config{NonFatal: func(err error) bool { return err == errA }, MaxHedges: 2}, allow: -1,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 2 * ms, err: errBoom}, {after: 5 * ms, value: 3}},
			wantErr:  errBoom, wantAt: 12 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms},
			lost: []int{0}, withdrawn: 1,
		},
		{
			name: "failures wait: an error marked fatal while another runs settles the call", wait: true, allow: -1,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 2 * ms, err: MarkFatal(errBoom)}},
			wantErr:  errBoom, wantAt: 12 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms},
			lost: []int{0}, withdrawn: 1,
		},
		{
			name: "failures wait: a negative pushback while another runs stops the hedges", wait: true,
			cfg: Config{MaxHedges: 2}, allow: -1,
			outcomes: []outcome{{after: 30 * ms, value: 1}, {after: 2 * ms, err: WithPushback(errA, -1)}, {after: 1 * ms, value: 3}},
			want:     1, wantAt: 30 * ms, started: map[int]time.Duration{0: 0, 1: 10 * ms}, withdrawn: 1,
		},
		{
			name: "a pushback delays the next hedge, and the one after follows a delay later", cfg: Config{NonFatal: nonFatal, MaxHedges: 3}, allow: -1,
			outcomes: []outcome{{after: 5 * ms, err: WithPushback(errA, 20*ms)}, {after: 100 * ms, value: 2}, {after: 2 * ms, value: 3}},
			want:     3, wantAt: 37 * ms, started: map[int]time.Duration{0: 0, 1: 25 * ms, 2: 35 * ms},
			lost: []int{1}, withdrawn: 2,
		},
		{
			name: "NoDelay starts every hedge at once", cfg: Config{NoDelay: true, MaxHedges: 2}, allow: -1,
			outcomes: []outcome{{after: 30 * ms, value: 1}, {after: 20 * ms, value: 2}, {after: 10 * ms, value: 3}},
			want:     3, wantAt: 10 * ms, started: map[int]time.Duration{0: 0, 1: 0, 2: 0},
			lost: []int{0, 1}, withdrawn: 2,
		},
		{
			name: "a pushback the budget refuses settles with the last failure", cfg: Config{NonFatal: nonFatal}, allow: 0,
			outcomes: []outcome{{after: 5 * ms, err: WithPushback(errA, 20*ms)}, {after: 1 * ms, value: 2}},
			wantErr:  errA, wantAt: 25 * ms, started: map[int]time.Duration{0: 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &tally.Budget{Allow: tc.allow}
				cfg := tc.cfg
				if cfg.Delay == 0 && !cfg.NoDelay {
					cfg.Delay = 10 * ms
				}
				cfg.Budget = b
				h := mustNew(t, cfg)
				s := newScript(tc.outcomes...)
				do := Do[int]
				if tc.wait {
					do = DoFirstSuccess[int]
				}
				v, err := do(context.Background(), h, s.fn, nil)
				at := time.Since(s.t0)
				if v != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Errorf("Do = %v, %v; want %v, %v", v, err, tc.want, tc.wantErr)
				}
				if at != tc.wantAt {
					t.Errorf("Do returned at %v, want %v", at, tc.wantAt)
				}
				drain() // losers finish
				if diff := cmp.Diff(tc.started, s.startedAt()); diff != "" {
					t.Errorf("attempt start times (-want +got):\n%s", diff)
				}
				for _, i := range tc.lost {
					if c := s.causeOf(i); c != ErrLost {
						t.Errorf("attempt %d ended with cause %v, want ErrLost", i, c)
					}
				}
				bc := b.Counts()
				withdrawn := bc.Withdrawn
				if withdrawn != tc.withdrawn {
					t.Errorf("budget: %d withdrawals; want %d", withdrawn, tc.withdrawn)
				}
				// The call is recorded once as a first attempt, with its
				// real outcome; each hedge that ran to a result as a copy,
				// and no more of them than were paid for.
				want := budget.Attempt{N: 1}
				if tc.wantErr != nil {
					want = budget.Attempt{N: 1, Failed: true, Class: failure.Transient}
				}
				var firsts, copies []budget.Attempt
				for _, a := range bc.Records {
					if a.N == 1 {
						firsts = append(firsts, a)
					} else {
						copies = append(copies, a)
					}
				}
				if diff := cmp.Diff([]budget.Attempt{want}, firsts); diff != "" {
					t.Errorf("budget records of the call (-want +got):\n%s", diff)
				}
				if len(copies) > withdrawn {
					t.Errorf("%d hedges recorded, %d paid for", len(copies), withdrawn)
				}
				for _, a := range copies {
					if a.N != 2 || a.Charged != failure.Transient {
						t.Errorf("hedge recorded as %+v, want N 2, charged Transient", a)
					}
				}
				for _, c := range bc.Classes {
					if c != failure.Transient {
						t.Errorf("hedge withdrew class %v, want Transient", c)
					}
				}
			})
		})
	}
}

// TestDoCleanup checks that late successful results go to cleanup, on
// either side: a primary that answers after the hedge won, and a hedge
// that answers after Do returned.
func TestDoCleanup(t *testing.T) {
	tests := []struct {
		name        string
		outcomes    []outcome
		want        int
		wantAt      time.Duration
		wantCleaned []int
	}{
		{"late primary", []outcome{{after: 30 * ms, value: 1}, {after: 5 * ms, value: 2}}, 2, 30 * ms, []int{1}},
		{"late hedge", []outcome{{after: 12 * ms, value: 1}, {after: 50 * ms, value: 2}}, 1, 12 * ms, []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := mustNew(t, Config{Delay: 10 * ms, Budget: &tally.Budget{Allow: -1}})
				s := newScript(tc.outcomes...)
				s.ignore = always
				var mu sync.Mutex
				var cleaned []int
				v, err := Do(context.Background(), h, s.fn, func(v int) {
					mu.Lock()
					defer mu.Unlock()
					cleaned = append(cleaned, v)
				})
				if at := time.Since(s.t0); v != tc.want || err != nil || at != tc.wantAt {
					t.Errorf("Do = %v, %v at %v; want %v, nil at %v", v, err, at, tc.want, tc.wantAt)
				}
				drain()
				mu.Lock()
				defer mu.Unlock()
				if diff := cmp.Diff(tc.wantCleaned, cleaned); diff != "" {
					t.Errorf("cleaned (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestDoCancelsWinnerOnReturn checks that no attempt context outlives Do.
func TestDoCancelsWinnerOnReturn(t *testing.T) {
	for _, primaryWins := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			h := mustNew(t, Config{Delay: 10 * ms, Budget: &tally.Budget{Allow: -1}})
			var ctxs [2]context.Context
			var mu sync.Mutex
			_, err := Do(context.Background(), h, func(ctx context.Context, attempt int) (int, error) {
				mu.Lock()
				ctxs[attempt] = ctx
				mu.Unlock()
				d := 5 * ms
				if primaryWins != (attempt == 0) {
					d = 100 * ms
				}
				select {
				case <-time.After(d):
					return attempt, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, ctx := range ctxs {
				if ctx != nil && ctx.Err() == nil {
					t.Errorf("primaryWins=%v: attempt %d's context is still live after Do returned", primaryWins, i)
				}
			}
			drain()
		})
	}
}

// TestDoCallerCancels cancels the caller's context while the primary and
// a hedge run: Do returns at once and every attempt that honours its
// context sees the caller's cause; synctest.Test fails if any goroutine is
// left behind.
func TestDoCallerCancels(t *testing.T) {
	causeStop := errors.New("caller gave up")
	nonFatal := func(error) bool { return true }
	tests := []struct {
		name     string
		cfg      Config
		wait     bool // DoFirstSuccess instead of Do
		outcomes []outcome
		ignore   func(int) bool
		wantErr  error
		honour   []int // attempts that must see the caller's cause
	}{
		{
			name:     "both attempts honour cancellation: the primary's error",
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 100 * ms, value: 2}},
			wantErr:  context.Canceled, honour: []int{0, 1},
		},
		{
			name:     "a hedge that ignores it runs on after Do returns",
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 100 * ms, value: 2}},
			ignore:   func(i int) bool { return i == 1 },
			wantErr:  context.Canceled, honour: []int{0},
		},
		{
			name:     "waiting on hedges alone: the caller's cause",
			cfg:      Config{NonFatal: nonFatal},
			outcomes: []outcome{{after: 12 * ms, err: errA}, {after: 100 * ms, value: 2}},
			ignore:   func(i int) bool { return i == 1 },
			wantErr:  causeStop,
		},
		{
			name:     "failures wait: once the caller gave up, a failure settles the call",
			wait:     true,
			outcomes: []outcome{{after: 100 * ms, value: 1}, {after: 100 * ms, value: 2}},
			wantErr:  context.Canceled, honour: []int{0, 1},
		},
		{
			name:     "failures wait: a waiting failure, then the caller's cause",
			wait:     true,
			outcomes: []outcome{{after: 12 * ms, err: errA}, {after: 100 * ms, value: 2}},
			ignore:   func(i int) bool { return i == 1 },
			wantErr:  causeStop,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tc.cfg
				cfg.Delay, cfg.Budget = 10*ms, &tally.Budget{Allow: -1}
				h := mustNew(t, cfg)
				ctx, cancel := context.WithCancelCause(context.Background())
				s := newScript(tc.outcomes...)
				s.ignore = tc.ignore
				time.AfterFunc(15*ms, func() { cancel(causeStop) })
				do := Do[int]
				if tc.wait {
					do = DoFirstSuccess[int]
				}
				v, err := do(ctx, h, s.fn, nil)
				if at := time.Since(s.t0); v != 0 || !errors.Is(err, tc.wantErr) || at != 15*ms {
					t.Errorf("Do = %v, %v at %v; want 0, %v at 15ms", v, err, at, tc.wantErr)
				}
				drain()
				for _, i := range tc.honour {
					if c := s.causeOf(i); c != causeStop {
						t.Errorf("attempt %d saw cause %v, want the caller's", i, c)
					}
				}
			})
		})
	}
}

// TestDoConcurrent runs many hedged calls at once on one Hedger, with
// every kind of outcome, through Do and DoFirstSuccess alike, for the
// race detector.
func TestDoConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := mustNew(t, Config{MaxHedges: 2, NonFatal: func(err error) bool { return err == errA }, MaxDelay: 20 * ms})
		// 16 goroutines of 40 calls cover every combination of the
		// outcome patterns below (k up to 640 > lcm 420). Three times as
		// many goroutines in one bubble crashed the race detector's own
		// runtime now and then (SIGSEGV in its stack depot, also before
		// DoFirstSuccess existed), not a race in this package.
		swarm.Go(t, 16, func(g int) {
			for i := range 40 {
				k := g*40 + i
				s := newScript(
					outcome{after: time.Duration(k%7) * 4 * ms, value: 1, err: []error{nil, errA, errBoom}[k%3]},
					outcome{after: time.Duration(k%5) * 3 * ms, value: 2, err: []error{nil, errA}[k%2]},
					outcome{after: time.Duration(k%3) * 5 * ms, value: 3},
				)
				if k%4 == 0 {
					s.ignore = always
				}
				do := Do[int]
				if (k/5)%2 == 1 {
					do = DoFirstSuccess[int]
				}
				do(context.Background(), h, s.fn, func(int) {})
			}
		})
		drain()
	})
}

// A primary that never looks at its context, overtaken by a hedge, finds
// its context cancelled with ErrLost when it does look; the winner's
// context is cancelled with context.Canceled once Do returns.
func TestUnwatchedLoserCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := mustNew(t, Config{Delay: 10 * time.Millisecond, MaxHedges: 1, Budget: budget.Unlimited})
		var winner context.Context
		v, err := Do(t.Context(), h, func(ctx context.Context, attempt int) (int, error) {
			if attempt == 1 {
				winner = ctx
				return 1, nil
			}
			time.Sleep(time.Second) // busy, not watching ctx
			if err := ctx.Err(); err != context.Canceled {
				t.Errorf("primary: Err() = %v, want Canceled", err)
			}
			if cause := context.Cause(ctx); cause != ErrLost {
				t.Errorf("primary: Cause() = %v, want ErrLost", cause)
			}
			select {
			case <-ctx.Done():
			default:
				t.Error("primary: Done() open after the hedge won")
			}
			return 0, ctx.Err()
		}, nil)
		if v != 1 || err != nil {
			t.Fatalf("Do = %v, %v; want the hedge's 1, nil", v, err)
		}
		if cause := context.Cause(winner); cause != context.Canceled {
			t.Errorf("winner after Do: Cause() = %v, want Canceled", cause)
		}
	})
}

// A primary that wins without looking at its context leaves a context
// that is cancelled, with context.Canceled, once Do returns.
func TestUnwatchedWinnerCancelled(t *testing.T) {
	h := mustNew(t, Config{Delay: time.Hour})
	var got context.Context
	if _, err := Do(t.Context(), h, func(ctx context.Context, _ int) (int, error) {
		got = ctx
		return 1, nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err, cause := got.Err(), context.Cause(got); err != context.Canceled || cause != context.Canceled {
		t.Errorf("after Do: Err() = %v, Cause() = %v; want Canceled, Canceled", err, cause)
	}
	select {
	case <-got.Done():
	default:
		t.Error("after Do: Done() open")
	}
}

// A primary that wins at once costs one allocation, its context's, when
// it does not watch that context.
func TestPrimaryWinsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	h := mustNew(t, Config{Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fn := func(context.Context, int) (int, error) { return 1, nil }
	if n := testing.AllocsPerRun(100, func() { _, _ = Do(ctx, h, fn, nil) }); n != 1 {
		t.Errorf("%v allocations per call, want 1", n)
	}
}

// TestInsideRetry composes the layers in DESIGN order: retry loop ->
// hedging within one attempt -> attempt timeout around the whole hedged
// attempt. Each retry attempt is one hedged request; hedges draw on the
// hedge budget, retries on the retry budget; a hedged attempt that fails
// as a whole, or times out, is retried by the outer loop.
func TestInsideRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		retryBudget, hedgeBudget := &tally.Budget{Allow: -1}, &tally.Budget{Allow: -1}
		p, err := retry.New(retry.Config{
			Backoff:        backoff.Schedule{Immediate: true},
			AttemptTimeout: 50 * ms,
			Budget:         retryBudget,
		})
		if err != nil {
			t.Fatal(err)
		}
		h := mustNew(t, Config{Delay: 10 * ms, Budget: hedgeBudget, NonFatal: func(error) bool { return true }})

		// Per retry attempt, the scripted primary and hedge.
		scripts := [][]outcome{
			{{after: 3 * ms, err: errA}, {after: 2 * ms, err: errB}},     // both fail: the attempt fails with errB
			{{after: time.Hour, value: 1}, {after: time.Hour, value: 2}}, // both hang: the attempt times out
			{{after: 100 * ms, value: 1}, {after: 5 * ms, value: 2}},     // the hedge wins
		}
		var mu sync.Mutex
		var causes []error // context causes seen by the attempts of retry attempt 2
		tries := 0
		start := time.Now()
		v, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (int, error) {
			s := newScript(scripts[tries]...)
			tries++
			try := tries
			return Do(ctx, h, func(ctx context.Context, attempt int) (int, error) {
				v, err := s.fn(ctx, attempt)
				if try == 2 {
					mu.Lock()
					causes = append(causes, context.Cause(ctx))
					mu.Unlock()
				}
				return v, err
			}, nil)
		})
		took := time.Since(start)
		if v != 2 || err != nil || tries != 3 {
			t.Fatalf("DoValue = %v, %v after %d retry attempts; want 2, nil after 3", v, err, tries)
		}
		// 5 ms (primary fails at 3, hedge at 3+2) + 50 ms timeout + 15 ms.
		if took != 70*ms {
			t.Errorf("took %v, want 70ms", took)
		}
		drain()
		mu.Lock()
		defer mu.Unlock()
		if len(causes) != 2 || !errors.Is(causes[0], retry.ErrAttemptTimeout) || !errors.Is(causes[1], retry.ErrAttemptTimeout) {
			t.Errorf("attempts of the timed-out retry attempt saw causes %v, want the attempt timeout", causes)
		}
		if c := retryBudget.Counts(); len(c.Records) != 3 || c.Withdrawn != 2 {
			t.Errorf("retry budget: %d records, %d withdrawals; want 3 attempts, 2 retries", len(c.Records), c.Withdrawn)
		}
		if c := hedgeBudget.Counts(); len(c.Records) != 6 || c.Withdrawn != 3 {
			t.Errorf("hedge budget: %d records, %d withdrawals; want 6 requests, 3 hedges", len(c.Records), c.Withdrawn)
		}
		// Each hedged call's real outcome and its hedge's own, in either
		// order (the hedge is recorded on its own goroutine): both
		// failed; the attempt timed out (a Timeout, not a caller who gave
		// up) for both; the hedge won.
		want := [][]budget.Attempt{
			{{N: 1, Failed: true, Class: failure.Transient}, {N: 2, Failed: true, Class: failure.Transient, Charged: failure.Transient}},
			{{N: 1, Failed: true, Class: failure.Timeout}, {N: 2, Failed: true, Class: failure.Timeout, Charged: failure.Transient}},
			{{N: 1}, {N: 2, Charged: failure.Transient}},
		}
		var got [][]budget.Attempt
		for r := range slices.Chunk(hedgeBudget.Counts().Records, 2) {
			got = append(got, slices.SortedFunc(slices.Values(r), func(x, y budget.Attempt) int { return x.N - y.N }))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("hedge budget records (-want +got):\n%s", diff)
		}
	})
}

// TestRequestRecordsOutcome covers a request of the Hedger's policy as
// the simulator admits and ends it: one record per request, with its real
// outcome, classified as the retry loop classifies by default; a hedge is
// recorded as a copy, paid for as a transient retry.
func TestRequestRecordsOutcome(t *testing.T) {
	copyOf := func(a budget.Attempt) budget.Attempt {
		a.N, a.Charged = 2, failure.Transient
		return a
	}
	tests := []struct {
		name string
		err  error
		want []budget.Attempt
	}{
		{"success", nil, []budget.Attempt{{N: 1}}},
		{"transient failure", errBoom, []budget.Attempt{{N: 1, Failed: true, Class: failure.Transient}}},
		{"throttled failure", retry.Judge(errBoom, retry.Verdict{Class: failure.Throttled}), []budget.Attempt{{N: 1, Failed: true, Class: failure.Throttled}}},
		{"timeout", context.DeadlineExceeded, []budget.Attempt{{N: 1, Failed: true, Class: failure.Timeout}}},
		{"permanent failure", retry.MarkPermanent(errBoom), []budget.Attempt{{N: 1, Failed: true, Class: failure.Permanent}}},
		{"the error's own verdict", retry.Judge(errBoom, retry.Verdict{Class: failure.Timeout}), []budget.Attempt{{N: 1, Failed: true, Class: failure.Timeout}}},
		{"local rejection is not recorded", engine.NewRejection("test: rejected"), nil},
	}
	for _, tc := range tests {
		for _, hedge := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/hedge=%v", tc.name, hedge), func(t *testing.T) {
				b := &tally.Budget{Allow: -1}
				h := mustNew(t, Config{Delay: time.Millisecond, Budget: b})
				if _, ok := h.Begin(); !ok {
					t.Fatal("Begin: may not hedge")
				}
				r, err := engine.AdmitRequest(context.Background(), h.Policy(), hedge)
				if err != nil {
					t.Fatalf("AdmitRequest: %v", err)
				}
				if rs := b.Counts().Records; len(rs) != 0 {
					t.Fatalf("admitting recorded %v; the outcome is not known yet", rs)
				}
				r.End(tc.err)
				r.End(nil) // only the first End counts
				want := tc.want
				if hedge {
					want = nil
					for _, a := range tc.want {
						want = append(want, copyOf(a))
					}
				}
				c := b.Counts()
				if diff := cmp.Diff(want, c.Records); diff != "" {
					t.Errorf("records (-want +got):\n%s", diff)
				}
				if hedge != (c.Withdrawn == 1) {
					t.Errorf("%d withdrawals for a request with hedge %v", c.Withdrawn, hedge)
				}
			})
		}
	}
}

// TestFailingRequestsEarnNoBudget: hedged requests that all fail must not
// refill a token bucket, nor raise a gRPC budget; they lower the latter.
// Requests recorded as successes when they began did both.
func TestFailingRequestsEarnNoBudget(t *testing.T) {
	// The primary fails fatally 5 ms in, after its hedge started at 1 ms;
	// the hedge fails too.
	failing := []outcome{{after: 5 * ms, err: errBoom}, {after: 50 * ms, err: errBoom}}
	ok := []outcome{{after: ms / 2, value: 1}} // answers before the delay
	// requests makes n hedged requests, each scripted by outcomes and
	// ending in want (nil: a success).
	requests := func(t *testing.T, h *Hedger, n int, outcomes []outcome, want error) {
		t.Helper()
		for range n {
			if _, err := Do(context.Background(), h, newScript(outcomes...).fn, nil); !errors.Is(err, want) {
				t.Fatalf("Do: %v, want %v", err, want)
			}
		}
	}
	tests := []struct {
		name string
		// budget returns the budget and a reading of its tokens.
		budget                  func(t *testing.T) (budget.Budget, func() float64)
		failures, successes     int
		afterFail, afterSuccess float64
	}{
		// The arithmetic is behaviour 2.0's: ten hedges at 5 tokens each,
		// nothing back; each first-attempt success puts one token back.
		{"TokenBucket", func(t *testing.T) (budget.Budget, func() float64) {
			b := configtest.Must(budget.NewTokenBucket(budget.AWSStandardQuota()))(t)
			return b, func() float64 { return float64(b.Tokens()) }
		}, 10, 10, 450, 460},
		// 10 tokens, ratio 0.1: each failed request takes one token, each
		// success gives back the ratio.
		{"GRPC", func(t *testing.T) (budget.Budget, func() float64) {
			b := configtest.Must(budget.NewGRPC(budget.GRPCConfig{}))(t)
			return b, b.Tokens
		}, 3, 1, 7, 7.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, tokens := tc.budget(t)
				h := mustNew(t, Config{Delay: ms, Budget: b})
				requests(t, h, tc.failures, failing, errBoom)
				drain()
				if got := tokens(); got != tc.afterFail {
					t.Fatalf("after %d failed hedged requests: %v tokens, want %v", tc.failures, got, tc.afterFail)
				}
				requests(t, h, tc.successes, ok, nil)
				if got := tokens(); got != tc.afterSuccess {
					t.Fatalf("after %d successes: %v tokens, want %v", tc.successes, got, tc.afterSuccess)
				}
			})
		})
	}
}

// TestDoAttemptCountsEveryRequestOnce hedges the attempts of a retry
// policy with DoAttempt: the policy's budget pays for every hedge and
// records every request once, the attempts through the retry loop and the
// hedges as copies; the Hedger's own budget hears of nothing.
func TestDoAttemptCountsEveryRequestOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := &tally.Budget{Allow: -1}
		own := &tally.Budget{Allow: -1}
		p := configtest.Must(retry.New(retry.Config{Backoff: backoff.Schedule{Immediate: true}, Budget: shared}))(t)
		h := mustNew(t, Config{Delay: 10 * ms, Budget: own})
		// Attempt 1: primary and hedge fail; attempt 2: the hedge wins.
		scripts := [][]outcome{
			{{after: 15 * ms, err: errA}, {after: 20 * ms, err: errB}},
			{{after: 100 * ms, value: 1}, {after: 5 * ms, value: 2}},
		}
		tries := 0
		v, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (int, error) {
			s := newScript(scripts[tries]...)
			tries++
			return DoAttempt(ctx, h, p, s.fn, nil)
		})
		if v != 2 || err != nil {
			t.Fatalf("DoValue = %v, %v; want 2, nil", v, err)
		}
		drain()
		// Attempt 1's hedge failed (recorded as it ended, before the
		// attempt's failure, which is the hedge's error); then attempt 1,
		// attempt 2's hedge, which won, and attempt 2. Attempt 2's primary,
		// which lost, is the attempt the loop recorded.
		want := []budget.Attempt{
			{N: 2, Failed: true, Class: failure.Transient, Charged: failure.Transient},
			{N: 1, Failed: true, Class: failure.Transient},
			{N: 2, Charged: failure.Transient},
			{N: 2, Charged: failure.Transient},
		}
		sc := shared.Counts()
		if diff := cmp.Diff(want, sc.Records); diff != "" {
			t.Errorf("shared budget records (-want +got):\n%s", diff)
		}
		if sc.Withdrawn != 3 {
			t.Errorf("%d withdrawals, want 3 (two hedges, one retry)", sc.Withdrawn)
		}
		if oc := own.Counts(); len(oc.Records) != 0 || oc.Withdrawn != 0 {
			t.Errorf("the Hedger's own budget: %d records, %d withdrawals; want none", len(oc.Records), oc.Withdrawn)
		}
	})
}

// TestDoRecordsNothingWhenTheCallerGivesUp: a request whose caller
// cancelled says nothing about the dependency.
func TestDoRecordsNothingWhenTheCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &tally.Budget{Allow: -1}
		h := mustNew(t, Config{Delay: 10 * ms, Budget: b})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*ms, cancel)
		s := newScript(outcome{after: time.Hour, value: 1}, outcome{after: time.Hour, value: 2})
		if _, err := Do(ctx, h, s.fn, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Do: %v, want context.Canceled", err)
		}
		drain()
		if c := b.Counts(); len(c.Records) != 0 || c.Withdrawn != 1 {
			t.Errorf("budget: %d records, %d withdrawals; want 0, 1", len(c.Records), c.Withdrawn)
		}
	})
}

// TestRefundHedgeAdmittedAfterSettling: a hedge whose withdrawal is still
// being decided when the primary answers is paid for but never starts;
// its cost goes back to a budget that can refund it.
func TestRefundHedgeAdmittedAfterSettling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &tally.Budget{Allow: -1, Gate: make(chan struct{})}
		h := mustNew(t, Config{Delay: 10 * ms, Budget: b})
		s := newScript(outcome{after: 12 * ms, value: 1}, outcome{after: time.Millisecond, value: 2})
		// At 10 ms the timer asks the budget, which answers only after
		// the primary has settled the call at 12 ms.
		v, err := Do(context.Background(), h, s.fn, nil)
		if v != 1 || err != nil {
			t.Fatalf("Do = %v, %v; want 1, nil", v, err)
		}
		close(b.Gate)
		drain()
		if got := s.startedAt(); len(got) != 1 {
			t.Errorf("attempts started at %v, want the primary alone", got)
		}
		if c := b.Counts(); c.Withdrawn != 1 || c.Refunded != 1 {
			t.Errorf("withdrawn %d, refunded %d; want 1 and 1", c.Withdrawn, c.Refunded)
		}
	})
}

// TestRequestsRecordIntoRatio: a request of the Hedger's policy that ran
// to a result counts in a Ratio budget, a rejection does not, and neither
// does a hedge: each call counts once.
func TestRequestsRecordIntoRatio(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	r := configtest.Must(budget.NewRatio(budget.RatioConfig{Ratio: 1, Now: clock}))(t)
	h := mustNew(t, Config{Budget: r})
	for _, end := range []struct {
		hedge bool
		err   error
	}{{false, nil}, {false, nil}, {false, errBoom}, {false, fmt.Errorf("open: %w", retry.ErrRejected)}, {true, nil}, {true, errBoom}} {
		req, err := engine.AdmitRequest(context.Background(), h.Policy(), end.hedge)
		if err != nil {
			t.Fatalf("AdmitRequest: %v", err)
		}
		req.End(end.err)
	}
	if got, _ := r.Counts(now); got != 3 {
		t.Errorf("the budget counts %d requests, want 3", got)
	}
}

// hedge's markers return nil for nil, as retry's do.
func TestMarkersOfNil(t *testing.T) {
	if err := MarkFatal(nil); err != nil {
		t.Errorf("MarkFatal(nil) = %T, want nil", err)
	}
	if err := WithPushback(nil, time.Second); err != nil {
		t.Errorf("WithPushback(nil, 1s) = %T, want nil", err)
	}
}

// TestDoAttemptGuardsSeeEveryRequest: under DoAttempt the retry policy's
// guards admit every hedge and hear how it ended, as they do the
// attempt; a hedge a guard rejects is not sent.
func TestDoAttemptGuardsSeeEveryRequest(t *testing.T) {
	tests := []struct {
		name    string
		allow   int
		started map[int]time.Duration
		want    [5]int // admitted, rejected, succeeded, failed, abandoned
	}{
		{"hedge admitted: two requests, two successes", -1, map[int]time.Duration{0: 0, 1: 10 * ms}, [5]int{2, 0, 2, 0, 0}},
		{"hedge rejected: not sent", 1, map[int]time.Duration{0: 0}, [5]int{1, 1, 1, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := &tally.Guard{Allow: tc.allow}
				p := configtest.Must(retry.New(retry.Config{Budget: budget.Unlimited, Guards: []admission.Guard{g}}))(t)
				h := mustNew(t, Config{Delay: 10 * ms})
				// The primary answers at 30 ms, a hedge 5 ms after it starts.
				s := newScript(outcome{after: 30 * ms, value: 1}, outcome{after: 5 * ms, value: 2})
				if _, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (int, error) {
					return DoAttempt(ctx, h, p, s.fn, nil)
				}); err != nil {
					t.Fatalf("DoValue: %v", err)
				}
				drain()
				if diff := cmp.Diff(tc.started, s.startedAt()); diff != "" {
					t.Errorf("attempt start times (-want +got):\n%s", diff)
				}
				c := g.Counts()
				if got := [5]int{c.Admitted, c.Rejected, c.Succeeded, c.Failed, c.Abandoned}; got != tc.want {
					t.Errorf("guard: admitted, rejected, succeeded, failed, abandoned = %v, want %v", got, tc.want)
				}
			})
		})
	}
}
