package hedge

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
)

// TestEndRecordsOutcome covers End as the simulator calls it: one record
// per request, with its real outcome, classified by Config.Classify.
func TestEndRecordsOutcome(t *testing.T) {
	onlyThrottled := func(error) budget.Class { return budget.Throttled }
	tests := []struct {
		name string
		cfg  Config
		err  error
		want []budget.Attempt
	}{
		{"success", Config{}, nil, []budget.Attempt{{N: 1}}},
		{"transient failure", Config{}, errBoom, []budget.Attempt{{N: 1, Failed: true, Class: budget.Transient}}},
		{"throttled failure", Config{}, retry.MarkThrottled(errBoom), []budget.Attempt{{N: 1, Failed: true, Class: budget.Throttled}}},
		{"timeout", Config{}, context.DeadlineExceeded, []budget.Attempt{{N: 1, Failed: true, Class: budget.Timeout}}},
		{"permanent failure", Config{}, retry.MarkPermanent(errBoom), []budget.Attempt{{N: 1, Failed: true, Class: budget.Permanent}}},
		{"custom classifier", Config{Classify: onlyThrottled}, errBoom, []budget.Attempt{{N: 1, Failed: true, Class: budget.Throttled}}},
		{"local rejection is not recorded", Config{}, retry.NewRejection("test: rejected"), nil},
		{"shared with retry: nothing recorded", Config{SharedWithRetry: true}, errBoom, nil},
		{"shared with retry: success not recorded either", Config{SharedWithRetry: true}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBudget{allow: -1}
			cfg := tc.cfg
			cfg.Delay, cfg.Budget = time.Millisecond, b
			h := mustNew(t, cfg)
			if _, ok := h.Begin(); !ok {
				t.Fatal("Begin: may not hedge")
			}
			if len(b.records) != 0 {
				t.Fatalf("Begin recorded %v; the outcome is not known yet", b.records)
			}
			h.End(tc.err)
			if diff := cmp.Diff(tc.want, b.records); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
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
	t.Run("TokenBucket", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, err := budget.NewTokenBucket(budget.AWSStandardQuota()) // the arithmetic below is behaviour 2.0's
			if err != nil {
				t.Fatal(err)
			}
			h := mustNew(t, Config{Delay: ms, Budget: b})
			for range 10 {
				if _, err := Do(context.Background(), h, newScript(failing...).fn, nil); !errors.Is(err, errBoom) {
					t.Fatalf("Do: %v, want errBoom", err)
				}
			}
			drain()
			// Ten hedges at 5 tokens each, nothing back.
			if got := b.Tokens(); got != 450 {
				t.Fatalf("after 10 failed hedged requests: %d tokens, want 450", got)
			}
			for range 10 {
				if _, err := Do(context.Background(), h, newScript(ok...).fn, nil); err != nil {
					t.Fatal(err)
				}
			}
			// Each first-attempt success puts one token back.
			if got := b.Tokens(); got != 460 {
				t.Fatalf("after 10 successes: %d tokens, want 460", got)
			}
		})
	})
	t.Run("GRPC", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, err := budget.NewGRPC(budget.GRPCConfig{}) // 10 tokens, ratio 0.1
			if err != nil {
				t.Fatal(err)
			}
			h := mustNew(t, Config{Delay: ms, Budget: b})
			for range 3 {
				if _, err := Do(context.Background(), h, newScript(failing...).fn, nil); !errors.Is(err, errBoom) {
					t.Fatalf("Do: %v, want errBoom", err)
				}
			}
			drain()
			if got := b.Tokens(); got != 7 {
				t.Fatalf("after 3 failed requests: %v tokens, want 7", got)
			}
			if _, err := Do(context.Background(), h, newScript(ok...).fn, nil); err != nil {
				t.Fatal(err)
			}
			if got := b.Tokens(); got != 7.1 {
				t.Fatalf("after a success: %v tokens, want 7.1", got)
			}
		})
	})
}

// TestSharedBudgetCountsRequestsOnce shares one budget between a retry
// policy and the hedger inside its attempts: the policy records each
// attempt, so the hedger must not record the request again.
func TestSharedBudgetCountsRequestsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := &fakeBudget{allow: -1}
		p, err := retry.New(retry.Config{Backoff: backoff.Schedule{Immediate: true}, Budget: shared})
		if err != nil {
			t.Fatal(err)
		}
		h := mustNew(t, Config{Delay: 10 * ms, Budget: shared, SharedWithRetry: true})
		// Attempt 1: primary and hedge fail; attempt 2: the hedge wins.
		scripts := [][]outcome{
			{{after: 15 * ms, err: errA}, {after: 20 * ms, err: errB}},
			{{after: 100 * ms, value: 1}, {after: 5 * ms, value: 2}},
		}
		tries := 0
		v, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (int, error) {
			s := newScript(scripts[tries]...)
			tries++
			return Do(ctx, h, s.fn, nil)
		})
		if v != 2 || err != nil {
			t.Fatalf("DoValue = %v, %v; want 2, nil", v, err)
		}
		drain()
		// The retry loop's records alone: attempt 1 failed, attempt 2
		// succeeded. Withdrawals: the hedge of each attempt and the retry.
		want := []budget.Attempt{{N: 1, Failed: true, Class: budget.Transient}, {N: 2, Charged: budget.Transient}}
		if diff := cmp.Diff(want, shared.records); diff != "" {
			t.Errorf("shared budget records (-want +got):\n%s", diff)
		}
		if _, withdrawn, _ := shared.counts(); withdrawn != 3 {
			t.Errorf("%d withdrawals, want 3 (two hedges, one retry)", withdrawn)
		}
	})
}

// TestDoRecordsNothingWhenTheCallerGivesUp: a request whose caller
// cancelled says nothing about the dependency.
func TestDoRecordsNothingWhenTheCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &fakeBudget{allow: -1}
		h := mustNew(t, Config{Delay: 10 * ms, Budget: b})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*ms, cancel)
		s := newScript(outcome{after: time.Hour, value: 1}, outcome{after: time.Hour, value: 2})
		if _, err := Do(ctx, h, s.fn, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Do: %v, want context.Canceled", err)
		}
		drain()
		if records, withdrawn, _ := b.counts(); records != 0 || withdrawn != 1 {
			t.Errorf("budget: %d records, %d withdrawals; want 0, 1", records, withdrawn)
		}
	})
}

// TestRefundHedgeAdmittedAfterSettling: a hedge whose withdrawal is still
// being decided when the primary answers is paid for but never starts;
// its cost goes back to a budget that can refund it.
func TestRefundHedgeAdmittedAfterSettling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &fakeBudget{allow: -1, gate: make(chan struct{})}
		h := mustNew(t, Config{Delay: 10 * ms, Budget: b})
		s := newScript(outcome{after: 12 * ms, value: 1}, outcome{after: time.Millisecond, value: 2})
		// At 10 ms the timer asks the budget, which answers only after
		// the primary has settled the call at 12 ms.
		v, err := Do(context.Background(), h, s.fn, nil)
		if v != 1 || err != nil {
			t.Fatalf("Do = %v, %v; want 1, nil", v, err)
		}
		close(b.gate)
		drain()
		if got := s.startedAt(); len(got) != 1 {
			t.Errorf("attempts started at %v, want the primary alone", got)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.withdrawn != 1 || b.refunded != 1 {
			t.Errorf("withdrawn %d, refunded %d; want 1 and 1", b.withdrawn, b.refunded)
		}
	})
}

// TestEndRecordsIntoRatio: End(nil) counts a request in a Ratio budget
// (by the direct call of its success path), a rejection does not, and
// with SharedWithRetry End counts nothing.
func TestEndRecordsIntoRatio(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	for _, shared := range []bool{false, true} {
		r, err := budget.NewRatio(budget.RatioConfig{Ratio: 0.1, NoFloor: true, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		h := mustNew(t, Config{Budget: r, SharedWithRetry: shared})
		h.End(nil)
		h.End(nil)
		h.End(errBoom)
		h.End(fmt.Errorf("open: %w", retry.ErrRejected))
		want := int64(3)
		if shared {
			want = 0
		}
		if got, _ := r.Counts(now); got != want {
			t.Errorf("SharedWithRetry %v: the budget counts %d requests, want %d", shared, got, want)
		}
	}
}
