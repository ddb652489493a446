package periodic_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/periodic"
)

// A minute-aligned job with up to 10 s of full jitter after each minute.
// Passing exact draws shows where the ticks land: the lowest draw is on
// the minute, the highest 10 s after it.
func ExampleSeries() {
	s := periodic.Schedule{Interval: time.Minute, Align: true, Spread: 10 * time.Second}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	q, err := periodic.NewSeries(s, start)
	if err != nil {
		fmt.Println(err)
		return
	}
	now := start
	for _, u := range []uint64{0, math.MaxUint64, 1 << 63} {
		now = q.Next(now, u)
		fmt.Println(now.Format(time.TimeOnly))
	}
	// Output:
	// 10:00:00
	// 10:01:10
	// 10:02:05
}

// Run calls the job at each tick until the context ends. Without jitter
// (never in a fleet), every 10 ms from the start.
func ExampleRun() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	err := periodic.Run(ctx, periodic.Schedule{Interval: 10 * time.Millisecond, Jitter: backoff.None},
		func(ctx context.Context, tick time.Time) {
			runs++
			if runs == 3 {
				cancel()
			}
		})
	fmt.Println(runs, err)
	// Output:
	// 3 context canceled
}

// A Ticker's channel closes when its context ends, so a range loop ends
// with it. Without jitter the first tick comes at once; the next would
// come an hour later.
func ExampleNewTicker() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tk, err := periodic.NewTicker(ctx, periodic.Schedule{Interval: time.Hour, Jitter: backoff.None})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tk.Stop()
	for range tk.C {
		fmt.Println("tick")
		cancel()
	}
	fmt.Println("closed")
	// Output:
	// tick
	// closed
}
