package pause

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		if !For(ctx, time.Second) || time.Since(start) != time.Second {
			t.Errorf("For(1s) on a live context: want true after 1s, ended after %v", time.Since(start))
		}
		if !For(ctx, 0) || !For(ctx, -time.Second) {
			t.Error("For(<=0) on a live context = false, want true")
		}
		time.AfterFunc(100*time.Millisecond, cancel)
		start = time.Now()
		if For(ctx, time.Hour) || time.Since(start) != 100*time.Millisecond {
			t.Errorf("For(1h) cancelled at 100ms: want false at once, ended after %v", time.Since(start))
		}
		if For(ctx, 0) {
			t.Error("For(0) on a done context = true, want false")
		}
	})
}
