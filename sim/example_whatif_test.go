//go:build !race

// WhatIf runs the outage and storm scenarios at their published sizes:
// about 5 s on two cores, and ten times that under the race detector,
// which is why this example is left out of race-enabled runs.

package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/sim"
)

// A policy of three attempts with full jitter and no retry budget, beside
// unherd's default (the same schedule from 50 ms, with a token-bucket
// budget). The budget brings the attempts per call from three to about one
// in both scenarios, for both populations; for the open stream, whose
// arrivals do not wait for answers, it also cuts the outage's peak load,
// while a closed population, whose clients do wait, peaks about as high
// either way.
func ExampleWhatIf() {
	p := sim.Policy{Name: "3 attempts, no budget", Attempts: 3,
		Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Cap: 2 * time.Second, Jitter: backoff.Full},
		Budget:  "none"}
	results, err := sim.WhatIf(context.Background(), p, sim.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		for _, row := range r.Rows {
			fmt.Printf("%-7s %-6s %-21s peak %6.0f/s  %.1f attempts per call\n", r.Scenario,
				row["population"], row["policy"], row["peak_rps"], row["amplification"])
		}
	}
	// Output:
	// outage  closed 3 attempts, no budget peak  18280/s  3.0 attempts per call
	// outage  closed unherd default        peak  18360/s  1.0 attempts per call
	// outage  open   3 attempts, no budget peak  30690/s  3.0 attempts per call
	// outage  open   unherd default        peak  11020/s  1.0 attempts per call
	// storm   open   3 attempts, no budget peak    400/s  3.0 attempts per call
	// storm   open   unherd default        peak    310/s  1.0 attempts per call
	// storm   closed 3 attempts, no budget peak    460/s  3.0 attempts per call
	// storm   closed unherd default        peak    380/s  1.0 attempts per call
}
