package hedge

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/budget"
)

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
