package hedge

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
)

// TestInsideRetry composes the layers in DESIGN order: retry loop ->
// hedging within one attempt -> attempt timeout around the whole hedged
// attempt. Each retry attempt is one hedged request; hedges draw on the
// hedge budget, retries on the retry budget; a hedged attempt that fails
// as a whole, or times out, is retried by the outer loop.
func TestInsideRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		retryBudget, hedgeBudget := &fakeBudget{allow: -1}, &fakeBudget{allow: -1}
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
		if r, w, _ := retryBudget.counts(); r != 3 || w != 2 {
			t.Errorf("retry budget: %d records, %d withdrawals; want 3 attempts, 2 retries", r, w)
		}
		if r, w, _ := hedgeBudget.counts(); r != 3 || w != 3 {
			t.Errorf("hedge budget: %d records, %d withdrawals; want 3 requests, 3 hedges", r, w)
		}
		// Each hedged request's real outcome: both copies failed; the
		// attempt timed out (a Timeout, not a caller who gave up); a
		// hedge won.
		want := []budget.Attempt{{N: 1, Failed: true, Class: budget.Transient}, {N: 1, Failed: true, Class: budget.Timeout}, {N: 1}}
		if diff := cmp.Diff(want, hedgeBudget.records); diff != "" {
			t.Errorf("hedge budget records (-want +got):\n%s", diff)
		}
	})
}
