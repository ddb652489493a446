package throttle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
)

func newRateLimiter(t *testing.T) *RateLimiter {
	return configtest.Must(NewRateLimiter(RateLimiterSettings{}))(t)
}

func TestRateLimiterOffUntilThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRateLimiter(t)
		start := time.Now()
		for range 1000 {
			tk, err := r.Admit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r.Done(context.Background(), tk, success)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("1000 unthrottled calls waited %v, want 0", d)
		}
		if _, enabled := r.FillRate(); enabled {
			t.Fatalf("enabled without a throttling response")
		}
	})
}

// TestRateLimiterPaces: a throttling response at t = 0, before any send
// rate was measured, leaves the fill rate at its floor of 0.5 tokens/s
// and the bucket empty, so calls go out every 2 s.
func TestRateLimiterPaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRateLimiter(t)
		r.Done(context.Background(), 0, throttled)
		if rate, enabled := r.FillRate(); rate != MinFillRate || !enabled {
			t.Fatalf("fill rate %v enabled %v, want %v true", rate, enabled, MinFillRate)
		}
		start := time.Now()
		var at []time.Duration
		for range 3 {
			if _, err := r.Admit(context.Background()); err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
		}
		want := []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("admissions at %v, want %v", at, want)
			}
		}
	})
}

func TestRateLimiterConcurrentWaitersQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRateLimiter(t)
		r.Done(context.Background(), 0, throttled)
		start := time.Now()
		var mu sync.Mutex
		var last time.Duration
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.Admit(context.Background()); err != nil {
					t.Error(err)
				}
				mu.Lock()
				last = max(last, time.Since(start))
				mu.Unlock()
			}()
		}
		wg.Wait()
		// Five tokens at 0.5/s from an empty bucket: the last at 10 s.
		if last != 10*time.Second {
			t.Fatalf("last of 5 concurrent admissions at %v, want 10s", last)
		}
	})
}

func TestRateLimiterDeadlineAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRateLimiter(t)
		r.Done(context.Background(), 0, throttled)

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		if _, err := r.Admit(ctx); !errors.Is(err, ErrRateLimited) {
			t.Fatalf("a 2 s wait with 1 s left: err = %v, want ErrRateLimited", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("waited %v before refusing, want 0", d)
		}
		cancel()

		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		if _, err := r.Admit(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled during the wait: err = %v, want context.Canceled", err)
		}
		// The refused and the cancelled callers gave their tokens back:
		// the bucket has filled for 1 s, so the next token is 1 s away.
		start = time.Now()
		if _, err := r.Admit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("next admission waited %v, want 1s", d)
		}
	})
}

func TestRateLimiterIgnoresAbandoned(t *testing.T) {
	r := newRateLimiter(t)
	r.Done(context.Background(), 0, admission.Outcome{Err: errBoom, Class: failure.Throttled, Abandoned: true})
	if _, enabled := r.FillRate(); enabled {
		t.Fatalf("an abandoned attempt enabled the limiter")
	}
}

// TestRateLimiterRecovers: after a throttle, successes let the fill rate
// grow along the cubic, bounded by twice the measured send rate.
func TestRateLimiterRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRateLimiter(t)
		ctx := context.Background()
		// 10 calls/s for 5 s, then one throttle.
		for range 50 {
			r.Done(context.Background(), 0, success)
			time.Sleep(100 * time.Millisecond)
		}
		r.Done(context.Background(), 0, throttled)
		cut, _ := r.FillRate()
		if m := r.MeasuredRate(); cut > CubicBeta*m+1e-9 {
			t.Fatalf("fill rate %v after a throttle, want <= %v*%v", cut, CubicBeta, m)
		}
		for range 200 {
			tk, err := r.Admit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r.Done(context.Background(), tk, success)
		}
		grown, _ := r.FillRate()
		if grown <= cut || grown > 2*r.MeasuredRate()+1e-9 {
			t.Fatalf("fill rate %v after 200 successes (cut to %v, measured %v): want above the cut, at most twice measured", grown, cut, r.MeasuredRate())
		}
	})
}

// TestRateLimiterReserveAt drives the limiter with explicit times: after a
// throttle at t0 the fill rate is 0.5/s and the bucket empty, so two
// reservations at t0 wait 2 s and 4 s; 10 s later the bucket has refilled
// to its capacity of 1 token and the next reservation waits nothing.
func TestRateLimiterReserveAt(t *testing.T) {
	r, err := NewRateLimiter(RateLimiterSettings{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.ReserveAt(t0); w != 0 {
		t.Fatalf("before any throttle: wait %v, want 0", w)
	}
	r.DoneAt(t0, 0, throttled)
	tests := []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 2 * time.Second},
		{0, 4 * time.Second},
		{10 * time.Second, 0},
		{10 * time.Second, 2 * time.Second},
	}
	for i, tc := range tests {
		if w := r.ReserveAt(t0.Add(tc.at)); w != tc.want {
			t.Fatalf("reservation %d at %v: wait %v, want %v", i, tc.at, w, tc.want)
		}
	}
}
