// Package bench compares unherd with peer libraries side by side. It is a
// separate module so users of unherd never download the peers; it has no
// API, only benchmarks, and the command cmd/overloadchart, which draws
// the loopback overload run's goodput for the README
// (scripts/overload-chart.sh runs both), with gonum.org/v1/plot.
//
// # Scenarios
//
// Each benchmark is one scenario, and each of its sub-benchmarks one
// library, named BenchmarkScenario/library:
//
//   - FirstSuccess: a call whose first attempt succeeds.
//   - RetryWait: a call that fails twice and then succeeds, waiting 1 ns
//     on a timer between attempts, against floor-timer, a hand-written
//     loop with one timer per call.
//   - Retry2: the same with no delay; a floor, since unherd then arms no
//     timer and the peers do.
//   - BudgetParallel: a retry budget on every call, under b.RunParallel.
//   - Pipeline: retry, budget, circuit breaker, adaptive throttling and
//     an attempt timeout on a first-attempt success, against the bare call
//     under one context.WithTimeout.
//   - JitterDelay: one jittered exponential delay.
//   - HTTPGet, HTTPGetParallel: a GET to a loopback httptest server,
//     through a bare http.Transport and through each library's HTTP
//     integration over a transport like it.
//   - Hedge, HedgePrimaryWins: hedged calls to in-process replicas, with a
//     slow primary in one call of 25, and with none.
//
// The peers are failsafe-go, cenkalti/backoff v5, avast/retry-go v4,
// sethvargo/go-retry and hashicorp/go-retryablehttp, at the versions in
// go.mod. Each case and its unherd twin do the same work: the same
// attempts, the same delays (a timer armed wherever a peer arms one), the
// same budget or none, a cancellable caller context (never
// context.Background(), whose nil Done channel lets a library skip work),
// each peer in its cheapest correct usage: policies, executors and option
// lists built once outside the loop, and per call only where the library
// keeps per-call state. BENCHMARKS.md says per scenario what is and is not
// equal. Cases named floor-* (a direct call, a plain loop, a hand-written
// timer loop, a bare context.WithTimeout, one random draw, an unhedged
// call) and bare (the plain transport) are floors, not peers.
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
// table: the ratio of unherd to the fastest peer and to the scenario's
// floor, round by round, with the median and range, and whether the
// scenario's target is met. It writes BENCHMARKS.md only from a checkout
// without uncommitted changes. NOTES.md, appended to it, explains the
// targets and what misses them.
package bench
