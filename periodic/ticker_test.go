package periodic

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/backoff"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// constant returns a Rand that always draws u.
func constant(u uint64) func() uint64 { return func() uint64 { return u } }

func TestTickerTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		// Full jitter, spread 10s, middle draw: every tick 5s into its slot.
		tk, err := NewTicker(t.Context(), Schedule{Interval: time.Minute, Spread: 10 * time.Second, Rand: constant(1 << 63)})
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Stop()
		for k := range 3 {
			got := <-tk.C
			want := start.Add(time.Duration(k)*time.Minute + 5*time.Second)
			if !got.Equal(want) || !time.Now().Equal(want) {
				t.Errorf("tick %d: sent %v at %v, want both %v", k, got, time.Now(), want)
			}
		}
	})
}

func TestTickerStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk, err := NewTicker(t.Context(), Schedule{Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		<-tk.C
		tk.Stop()
		tk.Stop() // twice is fine
		if _, ok := <-tk.C; ok {
			// One tick may sit in the buffer; after it, C is closed.
			if _, ok := <-tk.C; ok {
				t.Error("C delivers ticks after Stop")
			}
		}
	})
}

func TestTickerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute+time.Second)
		defer cancel()
		tk, err := NewTicker(ctx, Schedule{Interval: time.Minute, Jitter: backoff.None})
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Stop()
		n := 0
		for range tk.C {
			n++
		}
		// Ticks at 0, 1, ... 5 minutes; the deadline closes C after them.
		if n != 6 {
			t.Errorf("%d ticks before the 5m1s deadline, want 6", n)
		}
	})
}

// TestTickerDrops: a receiver busy for three intervals misses the ticks in
// between, and the ticker stays on its grid.
func TestTickerDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		tk, err := NewTicker(t.Context(), Schedule{Interval: time.Second, Jitter: backoff.None})
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Stop()
		<-tk.C                              // 0s
		time.Sleep(3500 * time.Millisecond) // ticks at 1s sits in the buffer; 2s, 3s dropped
		if got := <-tk.C; !got.Equal(start.Add(time.Second)) {
			t.Errorf("buffered tick %v, want the one at 1s", got.Sub(start))
		}
		if got := <-tk.C; !got.Equal(start.Add(4 * time.Second)) {
			t.Errorf("next tick at %v, want 4s (on the grid)", got.Sub(start))
		}
	})
}

func TestNewTickerInvalid(t *testing.T) {
	if _, err := NewTicker(context.Background(), Schedule{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewTicker with no Interval: err = %v, want ErrInvalid", err)
	}
}

func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		var got []time.Duration
		// Highest draw of equal jitter over 1m: the end of each slot.
		s := Schedule{Interval: time.Minute, Jitter: backoff.Equal, Rand: constant(math.MaxUint64)}
		err := Run(ctx, s, func(ctx context.Context, tick time.Time) {
			if !tick.Equal(time.Now()) {
				t.Errorf("job called at %v for tick %v", time.Now(), tick)
			}
			got = append(got, tick.Sub(start))
			if len(got) == 2 {
				time.Sleep(150 * time.Second) // a slow run: slots 2 and 3 pass
			}
			if len(got) == 4 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
		want := []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 6 * time.Minute}
		if len(got) != len(want) {
			t.Fatalf("ticks %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("tick %d at %v, want %v", i, got[i], want[i])
			}
		}
	})
}

func TestRunInvalid(t *testing.T) {
	err := Run(context.Background(), Schedule{Interval: time.Second, Spread: time.Hour}, func(context.Context, time.Time) {
		t.Error("job ran")
	})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Run with Spread above Interval: err = %v, want ErrInvalid", err)
	}
}
