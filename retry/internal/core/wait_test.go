package core

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
)

var errWaitFail = errors.New("fail")

// failTwice returns an operation that fails twice in every call of three
// attempts and then succeeds.
func failTwice() func(context.Context) error {
	n := 0
	return func(context.Context) error {
		n++
		if n%3 != 0 {
			return errWaitFail
		}
		return nil
	}
}

// constantPolicy retries twice after a constant delay d, without a budget.
func constantPolicy(t *testing.T, d time.Duration) *Policy {
	t.Helper()
	p, err := New(Config{
		Backoff: backoff.Schedule{Base: d, Cap: d, Jitter: backoff.None, Constant: true},
		Budget:  budget.Unlimited,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWaitTimersAndBubbles runs calls that wait outside a synctest bubble,
// inside one, and outside again. Outside, the waits take their timer from
// a pool shared by every call; inside, they must follow the bubble's
// clock (a pooled timer would wait in real time) and must not leave a
// bubble's timer in the pool (using it outside would abort the process).
func TestWaitTimersAndBubbles(t *testing.T) {
	outside := func() {
		p := constantPolicy(t, time.Nanosecond)
		op := failTwice()
		for range 3 {
			if err := p.Do(context.Background(), op); err != nil {
				t.Fatal(err)
			}
		}
	}
	outside()
	synctest.Test(t, func(t *testing.T) {
		p := constantPolicy(t, 50*time.Millisecond)
		op := failTwice()
		for range 3 {
			start := time.Now()
			if err := p.Do(context.Background(), op); err != nil {
				t.Fatal(err)
			}
			// Two waits of 50 ms on the bubble's clock, exactly.
			if got := time.Since(start); got != 100*time.Millisecond {
				t.Fatalf("call took %v on the bubble's clock, want 100ms", got)
			}
		}
	})
	outside()
}

// inBubble tells a synctest bubble from the rest with one monotonic clock
// read: outside it is false, inside it is true, also after a year of the
// bubble's clock and with a deadline on the context.
func TestInBubble(t *testing.T) {
	if inBubble() {
		t.Fatal("inBubble outside a bubble")
	}
	synctest.Test(t, func(t *testing.T) {
		if !inBubble() {
			t.Fatal("not inBubble inside a bubble")
		}
		time.Sleep(365 * 24 * time.Hour)
		if !inBubble() {
			t.Fatal("not inBubble after a year of the bubble's clock")
		}
		go func() {
			if !inBubble() {
				t.Error("not inBubble on another goroutine of the bubble")
			}
		}()
		synctest.Wait()
	})
	if inBubble() {
		t.Fatal("inBubble after the bubble")
	}
}

// TestWaitCancelled checks that a wait cut short by the caller ends the
// call at once, and that the next call still waits its full delay.
func TestWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := constantPolicy(t, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(500 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		if err := p.Do(ctx, failTwice()); !errors.Is(err, ErrCancelled) {
			t.Fatalf("Do = %v, want ErrCancelled", err)
		}
		if got := time.Since(start); got != 500*time.Millisecond {
			t.Fatalf("cancelled call took %v, want 500ms", got)
		}
		start = time.Now()
		if err := p.Do(context.Background(), failTwice()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Fatalf("next call took %v, want 2s", got)
		}
	})
}

// TestWaitAllocs checks that a call that waits twice allocates nothing
// once the pool holds a timer.
func TestWaitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	p := constantPolicy(t, time.Nanosecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op := failTwice()
	if n := testing.AllocsPerRun(100, func() {
		if err := p.Do(ctx, op); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a call with two waits allocates %v times, want 0", n)
	}
}
