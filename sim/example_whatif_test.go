//go:build !race

// WhatIf runs the outage and storm scenarios at their published sizes:
// a few seconds on two cores, and ten times that under the race detector,
// which is why this example is left out of race-enabled runs.

package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim"
)

// A policy of five attempts without jitter and without a retry budget,
// judged beside unherd's default (three attempts, full jitter, a
// token-bucket budget), by goodput: successful calls per second from the
// outage on, against the rate before it. On the open stream it gets the
// callers no more than the default by sending the failing dependency
// five times the default's load: worse. The closed population's clients
// wait for their retries, 1.5 s of them, so there it sends less than the
// default, whose refused calls wait out only the default's shorter
// schedule (50 and 100 ms) before the clients call again; more of its
// calls succeed, being fewer, but it gets no more done: similar. Worse
// for one kind of caller is worse overall. Against the metastable
// scenario's server, whose callers time out after 3 s, a 90% cut to its
// CPU for 8 s leaves it down for good with this policy; with the default
// it recovers from every cut mapped.
func ExampleWhatIf() {
	p := sim.Policy{Name: "5 attempts, no jitter, no budget",
		Retry: retry.Config{MaxAttempts: 5,
			Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Cap: 10 * time.Second, Jitter: backoff.None}},
		Budget: "none"}
	rep, err := sim.WhatIf(context.Background(), p, sim.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range rep.Comparisons {
		fmt.Printf("%-6s %-7s load during the outage %.2fx capacity (default %.2fx), goodput %.0f%% of the fault-free rate (default %.0f%%)\n",
			v.Population, v.Judgement, v.Yours.MeanX, v.Default.MeanX, v.Yours.GoodputPct, v.Default.GoodputPct)
	}
	fmt.Println("overall:", rep.Overall)
	for _, m := range rep.Margins {
		fmt.Printf("smallest trigger that leaves the metastable server down: %v (%s)\n", m.TipsAt, m.Policy)
	}
	// Output:
	// closed similar load during the outage 0.15x capacity (default 0.47x), goodput 67% of the fault-free rate (default 67%)
	// open   worse   load during the outage 2.45x capacity (default 0.50x), goodput 68% of the fault-free rate (default 67%)
	// overall: worse
	// smallest trigger that leaves the metastable server down: 90% for 8s (5 attempts, no jitter, no budget)
	// smallest trigger that leaves the metastable server down: <nil> (unherd default)
}
