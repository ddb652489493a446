package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

var errUnavailable = errors.New("service unavailable")

// A driver with a clock of its own (a simulator, an event loop) runs the
// same state machine retry.Policy.Do runs: Admit before every attempt, Done after it
// with the time and a random draw, then wait the Decision's delay.
func ExampleCall() {
	p, err := retry.New(retry.Config{MaxAttempts: 3})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	draw := uint64(math.MaxUint64) // the largest draw: full jitter waits its whole ceiling
	c := engine.Begin(context.Background(), p)
	for {
		if err := c.Admit(context.Background()); err != nil {
			fmt.Println("rejected:", err)
			return
		}
		d := c.Done(now, time.Time{}, errUnavailable, draw)
		if d.Reason != nil {
			fmt.Println("stop:", c.Err(d))
			return
		}
		fmt.Printf("attempt %d failed; wait %v\n", c.Attempts(), d.Delay)
		now = now.Add(d.Delay)
	}
	// Output:
	// attempt 1 failed; wait 50ms
	// attempt 2 failed; wait 100ms
	// stop: retry: attempts exhausted after 3 attempts: service unavailable
}

// An integration that drives attempts in real time (a transport, an
// interceptor) runs each admitted attempt between StartAttempt, which
// bounds it by the attempt timeout, and End, which reports it and marks a
// timed-out attempt; Failed then decides, draws and waits. It tells the
// call its judgement of an answer with retry.Judge: here a "busy" answer
// that asks for 5 ms.
func ExampleStartAttempt() {
	p, err := retry.New(retry.Config{MaxAttempts: 3, AttemptTimeout: time.Second})
	if err != nil {
		panic(err)
	}
	answers := []string{"busy", "pong"}
	send := func(context.Context) (string, error) {
		reply := answers[0]
		answers = answers[1:]
		if reply == "busy" {
			return "", retry.Judge(errors.New("server busy"), retry.Verdict{Class: failure.Throttled, Delay: 5 * time.Millisecond, HasDelay: true})
		}
		return reply, nil
	}
	ctx := context.Background()
	c := engine.Begin(ctx, p)
	for {
		if err := c.Admit(ctx); err != nil {
			fmt.Println(err)
			return
		}
		a := engine.StartAttempt(ctx, p)
		reply, err := send(a.Context())
		if err = a.End(err); err == nil {
			c.Succeeded()
			fmt.Printf("%s after %d attempts\n", reply, c.Attempts())
			return
		}
		if err := c.Failed(ctx, err); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output: pong after 2 attempts
}
