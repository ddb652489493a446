// Package reliability is unherd's loopback reliability suite: it runs
// real clients against a real HTTP server on 127.0.0.1, injects faults,
// and checks that unherd's defaults hold the server's load and recover,
// comparing them with the loops people write by hand. It has no API; its
// tests are the product.
//
// The tests take tens of seconds and measure load, so they are behind the
// build tag "reliability" and run on their own, without the race
// detector, whose slowdown would change the load being measured (the code
// under test is race-tested by every package's own tests):
//
//	go test -tags reliability -count=1 -v ./reliability/
//
// scripts/test.sh runs them so, and scripts/reliability.sh writes their
// tables into RELIABILITY.md. Only unherd's defaults are asserted, so only
// they run unless UNHERD_RELIABILITY_COMPARE=1 adds the clients they are
// compared with (the script sets it).
//
// # The brown-out
//
// TestBrownOut: a server with a fixed capacity (20 requests at a time,
// 5 ms each; over capacity it answers 503 at once) is called by 200
// goroutines that loop (a closed population: workers and pollers that
// come straight back when a call fails, and process for 100 ms after a
// success) or by an open stream of requests at about the same rate; for
// 6 s the server answers 503 to everything. Each client type runs in
// turn: unherd's defaults (unherdhttp.NewTransport(nil,
// unherdhttp.Config{})), a hand-written loop that sleeps a fixed second
// between attempts, and one that retries at once. Every figure is a
// ratio measured in the same run: the server's load during and after the
// fault over its load before, the time goodput takes to return to 90% of
// its level before the fault, and new TCP connections over the number of
// callers. With unherd's defaults, the load during the fault stays at
// most 1.2 times the load before it, goodput is back within 1 s, and
// fewer than 2 requests per caller go out on a new connection (counted
// through httptrace; an open stream's callers are its calls in flight at
// the peak, if more than 200, since a loaded machine piles them up).
//
// On a machine too loaded to run the harness (the callers send less than
// half their load before the fault, or the server, whose 5 ms of work
// then takes longer, serves less than 80% of it), the load and recovery
// ratios would measure the machine, so the test checks connection reuse
// only and is skipped with the figures that show why.
// UNHERD_RELIABILITY_SEED (1 by default) seeds the callers' think times
// and the open stream's arrivals.
//
// # Faults survived
//
// TestFaultsSurvived: GETs through unherd's defaults over a link where
// package chaos injects resets, 503s with Retry-After, 429s and slow,
// spiky latency. No call may be lost (every one ends), and at most 1% may
// fail.
package reliability
