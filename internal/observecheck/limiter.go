package observecheck

import (
	"errors"
	"testing"
	"time"

	"github.com/unherd/unherd/limit"
)

// LimiterOf2 drives l, a limiter of 2 with a MaxWait of 50 ms and one
// waiter, inside a testing/synctest bubble, through what an adapter
// reports of a limiter: two requests are admitted; a Sheddable and a
// Normal one are refused; a Critical one waits 20 ms and gets the first
// slot; a Normal one waits 50 ms (MaxWait) in vain. It returns the two
// tokens still held, for the caller to read the gauges before and after
// their release.
func LimiterOf2(t *testing.T, l *limit.Limiter) (b, c limit.Token) {
	t.Helper()
	ctx := t.Context()
	a, _ := l.Acquire(time.Now())
	b, _ = l.Acquire(time.Now())
	if _, ok := l.AcquirePriority(time.Now(), limit.Sheddable); ok {
		t.Fatal("a third request admitted under a limit of 2")
	}
	if _, ok := l.Acquire(time.Now()); ok {
		t.Fatal("a third request admitted under a limit of 2")
	}
	// A Critical request waits 20 ms for a's slot.
	got := make(chan limit.Token, 1)
	go func() {
		tok, err := l.Wait(ctx, limit.Critical)
		if err != nil {
			t.Error(err)
		}
		got <- tok
	}()
	time.Sleep(20 * time.Millisecond)
	a.Served(time.Now())
	c = <-got
	// A Normal request waits 50 ms (MaxWait) in vain.
	if _, err := l.Wait(ctx, limit.Normal); !errors.Is(err, limit.ErrLimited) {
		t.Fatalf("Wait: %v, want ErrLimited", err)
	}
	return b, c
}

// AdaptiveLimiter returns a limiter whose AIMD limit starts at 10, and
// a function that moves it down: one request admitted and dropped
// (10 x 0.9), after which the limit is below 10.
func AdaptiveLimiter(t *testing.T) (l *limit.Limiter, drop func()) {
	t.Helper()
	alg, err := limit.NewAIMD(limit.AIMDConfig{InitialLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	l, err = limit.New(limit.Config{Algorithm: alg})
	if err != nil {
		t.Fatal(err)
	}
	return l, func() {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tok, _ := l.Acquire(now)
		tok.Dropped(now.Add(time.Millisecond))
	}
}
