package limit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
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
// limit follows the latency. Here every slot is taken at once by a
// server that runs some requests at once in 10 ms each and queues the
// rest, so a request waits 10 ms for each batch ahead of it. The
// limiter measures the latency of the requests admitted with few in
// flight (10 ms), then holds the limit where the median request's
// latency is about 1.25 times that (here about two batches' worth), and
// follows the server when it runs half as many at once.
func Example() {
	l, err := limit.New(limit.Config{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	serve := func(atOnce int, d time.Duration) {
		for end := now.Add(d); now.Before(end); {
			var toks []limit.Token
			for {
				tok, ok := l.Acquire(now)
				if !ok {
					break // refused: answer 503 at once
				}
				toks = append(toks, tok)
			}
			for i, tok := range toks {
				tok.Served(now.Add(time.Duration(i/atOnce+1) * 10 * time.Millisecond))
			}
			now = now.Add(time.Duration((len(toks)+atOnce-1)/atOnce) * 10 * time.Millisecond)
		}
	}
	fmt.Println("initial limit:", l.Limit())
	serve(8, time.Minute)
	fmt.Println("8 at once, limit:", l.Limit())
	serve(4, time.Minute)
	fmt.Println("4 at once, limit:", l.Limit())
	// Output:
	// initial limit: 20
	// 8 at once, limit: 17
	// 4 at once, limit: 9
}

// Priorities: with a limit of 10 and the default CriticalShare (0.1),
// once a Critical request has come, one slot is kept for Critical
// requests and one more for Normal ones, so Sheddable requests stop at 8
// in flight, Normal ones at 9, Critical ones at 10.
func ExampleLimiter_AcquirePriority() {
	l, err := limit.New(limit.Config{Algorithm: limit.Fixed(10)})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	count := func(p limit.Priority) int {
		n := 0
		for {
			if _, ok := l.AcquirePriority(now, p); !ok {
				return n
			}
			n++
		}
	}
	l.AcquirePriority(now, limit.Critical) // a health check: 1 in flight
	fmt.Println("sheddable admitted:", count(limit.Sheddable), "in flight:", l.InFlight())
	fmt.Println("normal admitted:", count(limit.Normal), "in flight:", l.InFlight())
	fmt.Println("critical admitted:", count(limit.Critical), "in flight:", l.InFlight())
	// Output:
	// sheddable admitted: 7 in flight: 8
	// normal admitted: 1 in flight: 9
	// critical admitted: 1 in flight: 10
}

// A request that finds no free slot waits up to MaxWait for one another
// request releases; a caller that gives up leaves the queue at once.
func ExampleLimiter_Wait() {
	l, err := limit.New(limit.Config{Algorithm: limit.Fixed(1), MaxWait: time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	busy, _ := l.Wait(ctx, limit.Normal)
	got := make(chan error, 1)
	go func() {
		tok, err := l.Wait(ctx, limit.Normal) // queues: the one slot is busy
		if err == nil {
			tok.Served(time.Now())
		}
		got <- err
	}()
	busy.Served(time.Now())       // the slot passes to the waiter, queued or about to be
	fmt.Println("waiter:", <-got) // within MaxWait, whichever came first

	busy, _ = l.Wait(ctx, limit.Normal)
	gone, cancel := context.WithCancel(ctx)
	cancel() // the caller has gone: no slot, at once
	_, err = l.Wait(gone, limit.Normal)
	fmt.Println("caller gone:", err)
	busy.Served(time.Now())
	// Output:
	// waiter: <nil>
	// caller gone: context canceled
}

// A client-side limit: the limiter as a guard of a retry policy bounds
// the attempts in flight to one dependency, and its refusal is a local
// rejection, never retried.
func ExampleLimiter_Guard() {
	l, err := limit.New(limit.Config{Algorithm: limit.Fixed(1)})
	if err != nil {
		panic(err)
	}
	p, err := retry.New(retry.Config{Guards: []admission.Guard{l.Guard()}})
	if err != nil {
		panic(err)
	}
	busy, _ := l.Acquire(time.Now()) // another call holds the one slot
	attempts := 0
	err = p.Do(context.Background(), func(ctx context.Context) error {
		attempts++
		return nil
	})
	fmt.Println("attempts:", attempts)
	fmt.Println("rejected:", errors.Is(err, retry.ErrRejected), "limited:", errors.Is(err, limit.ErrLimited))
	busy.Ignore()
	// Output:
	// attempts: 0
	// rejected: true limited: true
}

// A server reads the priority a client asks for from PriorityHeader, but
// lets an untrusted caller only lower it: "critical" from the open
// internet is served as Normal.
func ExampleParsePriority() {
	priority := func(r *http.Request, trusted bool) limit.Priority {
		p, err := limit.ParsePriority(r.Header.Get(limit.PriorityHeader))
		if err != nil || (!trusted && p == limit.Critical) {
			return limit.Normal
		}
		return p
	}
	r, _ := http.NewRequest("GET", "http://example.com/", nil)
	r.Header.Set(limit.PriorityHeader, "Critical")
	fmt.Println("trusted:", priority(r, true), "untrusted:", priority(r, false))
	r.Header.Set(limit.PriorityHeader, "sheddable")
	fmt.Println("untrusted, lowered:", priority(r, false))
	// Output:
	// trusted: critical untrusted: normal
	// untrusted, lowered: sheddable
}

// A limiter reports its refusals and the changes of its limit to an
// observer: here one that prints them.
func ExampleConfig_observer() {
	alg, err := limit.NewAIMD(limit.AIMDConfig{InitialLimit: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := limit.New(limit.Config{Algorithm: alg, Observer: observe.Func(func(_ context.Context, e observe.Event) {
		switch e.Kind {
		case observe.LimitChanged:
			fmt.Println(e.Kind, "limit", e.Limit, "in flight", e.InFlight)
		case observe.LimitRefused:
			fmt.Println(e.Kind, e.Priority, e.Err)
		}
	})})
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := l.Acquire(now)
	b, _ := l.Acquire(now)
	l.AcquirePriority(now, limit.Sheddable) // over the limit: refused
	a.Dropped(now.Add(time.Second))         // overload: the limit falls
	b.Served(now.Add(time.Second))          // served while the limit was in use: it grows
	// Output:
	// limit_refused sheddable limit: over the concurrency limit
	// limit_changed limit 1 in flight 1
	// limit_changed limit 2 in flight 0
}
