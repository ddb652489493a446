package backoff_test

import (
	"fmt"
	"math"
	"time"

	"github.com/unherd/unherd/backoff"
)

// The ceiling doubles from Base until it reaches Cap; jitter then picks a
// point below it. Passing the largest draw shows the ceiling itself.
func ExampleSchedule_Delay() {
	s := backoff.Schedule{Base: 100 * time.Millisecond, Cap: time.Second}
	for n := range 6 {
		fmt.Println(n, s.Delay(n, 0, math.MaxUint64))
	}
	// Output:
	// 0 100ms
	// 1 200ms
	// 2 400ms
	// 3 800ms
	// 4 1s
	// 5 1s
}

// Decorrelated jitter needs the previous delay; the caller's loop keeps it.
func ExampleSchedule_Delay_decorrelated() {
	s := backoff.Schedule{Base: 100 * time.Millisecond, Cap: 2 * time.Second, Jitter: backoff.Decorrelated}
	var prev time.Duration
	for n, u := range []uint64{math.MaxUint64, math.MaxUint64, 0, math.MaxUint64} {
		prev = s.Delay(n, prev, u)
		fmt.Println(prev)
	}
	// Output:
	// 300ms
	// 900ms
	// 100ms
	// 300ms
}
