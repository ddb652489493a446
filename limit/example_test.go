package limit_test

import (
	"fmt"
	"time"

	"github.com/unherd/unherd/limit"
)

// A fixed limit is a bulkhead: at most 2 requests at once, the third is
// refused at once.
func ExampleFixed() {
	l, err := limit.New(limit.Config{Algorithm: limit.Fixed(2)})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := l.Acquire(now)
	b, _ := l.Acquire(now)
	_, ok := l.Acquire(now)
	fmt.Println("third admitted:", ok, "in flight:", l.InFlight())
	a.Served(now.Add(20 * time.Millisecond))
	b.Ignore() // the client went away: not a sample
	_, ok = l.Acquire(now.Add(30 * time.Millisecond))
	fmt.Println("after two releases:", ok)
	// Output:
	// third admitted: false in flight: 2
	// after two releases: true
}

// The default limiter adapts: each request reports how it ended, and the
// limit follows the latency. It starts at 3 while it measures the
// latency of an unloaded server, grows while the latency stays near it,
// and falls when the latency triples.
func Example() {
	l, err := limit.New(limit.Config{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	serve := func(latency time.Duration, n int) {
		for range n {
			var toks []limit.Token
			for {
				tok, ok := l.Acquire(now)
				if !ok {
					break // refused: answer 503 at once
				}
				toks = append(toks, tok)
			}
			now = now.Add(latency)
			for _, tok := range toks {
				tok.Served(now)
			}
		}
	}
	fmt.Println("initial limit:", l.Limit())
	serve(10*time.Millisecond, 3000)
	steady := l.Limit()
	fmt.Println("latency steady, limit grew:", steady > 3)
	serve(30*time.Millisecond, 300)
	fmt.Println("latency tripled, limit fell:", l.Limit() < steady)
	// Output:
	// initial limit: 3
	// latency steady, limit grew: true
	// latency tripled, limit fell: true
}
