// Package bench compares unherd with peer libraries side by side. It is a
// separate module so users of unherd never download the peers; it has no
// API, only benchmarks.
//
// # Scenarios
//
// Each benchmark is one scenario, and each of its sub-benchmarks one
// library, named BenchmarkScenario/library:
//
//   - FirstSuccess: a call whose first attempt succeeds.
//   - Retry2: a call that fails twice and then succeeds, with no delay.
//   - JitterDelay: one jittered exponential delay.
//   - HTTPGet, HTTPGetParallel: a GET to a loopback httptest server,
//     through a bare http.Transport and through each library's HTTP
//     integration over a transport like it.
//   - Hedge, HedgePrimaryWins: hedged calls to in-process replicas, with a
//     slow primary in one call of 25, and with none.
//
// The peers are failsafe-go, cenkalti/backoff v5, avast/retry-go v4,
// sethvargo/go-retry and hashicorp/go-retryablehttp, at the versions in
// go.mod. Every library is configured as its README shows, with the same
// settings where it has them: three attempts (the first and two
// retries), jittered exponential backoff from 50 ms capped at 20 s, a
// zero delay where the scenario asks for one. Each peer gets its cheapest
// correct usage: policies, executors and option lists are built once
// outside the loop, and per call only where the library keeps per-call
// state. Cases named floor-* (a direct call, a loop that arms no timer, one
// random draw, an unhedged call) and bare (the plain transport) are
// floors, not peers.
//
// Every case checks its own attempt count and result and fails the
// benchmark when they are wrong, so that a broken case fails instead of
// looking fast. With -benchtime=1x (as the project's test script runs
// them) the benchmarks are a quick test of those checks.
//
// # Running
//
// run.sh runs every scenario several times, interleaved, summarises the
// runs with benchstat and writes BENCHMARKS.md, with a reading of each
// table computed from the medians: the ratio of unherd to the fastest
// peer and whether the scenario's target is met. NOTES.md, appended to
// it, explains the targets and what misses them.
package bench
