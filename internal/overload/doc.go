// Package overload is the loopback overload run of the reliability
// suites, apart from any protocol: a server whose handler has a fixed
// capacity of workers and an unbounded queue in front of them, an
// open-loop load of seeded Poisson callers at 0.5, 2, 4 and again 0.5
// times that capacity, the per-phase measurements (goodput over capacity,
// latency, work for callers gone, critical success, recovery), the goals
// a protection is judged against, and the table of a run.
//
// A protocol's test supplies the rest as [Row] values: Start serves a
// [Server] behind the row's protection (HTTP middleware, a gRPC server
// option) on loopback, calling [Server.Serve] from its handler, and
// returns the [Caller] that makes one call through the protocol's client.
// [Run] drives every row and judges the judged ones. The HTTP run is
// TestOverload in package reliability, the gRPC run TestOverload in
// unherdgrpc (build tag reliability); package reliability's doc describes
// the run and its goals.
//
// [ScaleFromEnv] and [Seed] read UNHERD_RELIABILITY_OVERLOAD (full for the
// issue's run, 8 s per phase; otherwise the suite's, 2.5 s per phase) and
// UNHERD_RELIABILITY_SEED (1 when unset).
package overload
