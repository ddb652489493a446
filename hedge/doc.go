// Package hedge sends a second request when the first is slow, and takes
// whichever answers first.
//
// The common case is one Hedger per dependency, built from a zero Config,
// shared by every goroutine that calls it:
//
//	h, err := hedge.New(hedge.Config{})
//	...
//	v, err := hedge.Do(ctx, h, func(ctx context.Context, attempt int) (T, error) {
//		return call(ctx, replicas[attempt%len(replicas)])
//	}, cleanup)
//
// Keep the defaults: a hedge after the 95th percentile of recent
// latencies, at most one per call, within a budget of 10% of requests
// (half of it the p95 rule's own share, half headroom for the moments
// when many calls are slow at once), and hedging suspended by itself when
// hedges stop winning. fn learns the attempt number and picks a replica by
// it; cleanup receives a late success (an HTTP body to close). Set
// Config.Delay only if you know your dependency's latency better than its
// recent history does.
//
// # What hedging cannot do
//
// Hedge only work that is safe to do twice: reads, or writes carrying an
// idempotency key. A hedge helps when the slowness belongs to one replica
// at one moment (a garbage-collection pause, a noisy neighbour, a queue
// behind a large request); it cannot help, and only adds load, when every
// replica is equally slow: one overloaded backend behind all of them, a
// fleet saturated as a whole, or a single replica. The Hedger notices
// that case (its hedges stop winning) and suspends itself, visibly
// ([Hedger.Suspended]); until it does, its budget bounds the damage.
// Hedging does not replace retries: a failure is still the outer retry
// loop's to handle.
//
// # Why
//
// Dean and Barroso ("The Tail at Scale", Communications of the ACM 56(2),
// 2013, https://research.google/pubs/the-tail-at-scale/) report that
// hedging after 10 ms cut the 99.9th-percentile latency of a 1,000-key
// fan-out from 1,800 ms to 74 ms for 2% more requests, and recommend
// waiting for the 95th-percentile latency, which bounds the extra load
// near 5%. The defaults reproduce that result in the simulator's fan-out
// (unherd sim hedge): the p95 rule alone spends about 5% of requests,
// and a budget of exactly that share, the former default, left nothing
// for a stalled server that slows hundreds of reads at once, which is when
// hedging pays.
//
// # How a call runs
//
// [Do] runs the primary (attempt 0) on the caller's goroutine. If it has
// not answered after the hedge delay, a hedge (attempt 1) starts on a
// timer's goroutine, and so on up to Config.MaxHedges (default 1), one
// delay apart. The first success wins; the other attempts' contexts are
// cancelled with cause [ErrLost], and a success that arrives later goes
// to the cleanup function. A fatal error settles the call too (gRPC's
// rule: every error is fatal unless Config.NonFatal says otherwise, like
// the nonFatalStatusCodes of gRPC's hedging policy in proposal A6,
// https://github.com/grpc/proposal/blob/master/A6-client-retries.md); a
// non-fatal one starts the next hedge at once. Do returns the winner's
// value, or the settling error unchanged (the last one when every attempt
// failed), so an outer retry loop classifies it as usual.
//
// [DoFirstSuccess] is Do for failures that may be local to one replica (a
// fast 503 from an overloaded server): a failure settles the call only
// when no other attempt is running, so it cannot cancel an attempt that
// may yet succeed, and the error returned is the last failure's. Package
// unherdhttp hedges HTTP requests with it.
//
// The delay is Config.Delay if set, otherwise the Config.Quantile (p95)
// of the latencies of recent successful calls, from a windowed quantile
// estimator (last 4,096 to 8,192 calls), bounded by MinDelay and MaxDelay.
// The quantile needs 10/(1-Quantile) latencies (200 for p95) to be
// trusted; until then (cold start) the delay is the largest latency
// observed so far, bounded by MinDelay and MaxDelay, and before the first
// latency it is MaxDelay, or there is no hedging if MaxDelay is zero. The
// default budget adds its own cold start: it allows a hedge once ten
// requests have ended.
//
// # Budget
//
// The books are the one engine's (package retry/engine): every request is
// an engine.Request, admitted before it is sent and recorded when it ends.
// [Do] and [DoFirstSuccess] keep them with the Hedger's [Hedger.Policy], a
// retry policy of one attempt whose budget is Config.Budget: each hedge
// withdraws failure.Transient before it starts (and, if the call settles
// while the budget is being asked, does not start and gets its cost back
// from a budget.Refunder); the call is recorded once, when it settles, as
// a first attempt with its real outcome (budget.Attempt{N: 1}, or {N: 1,
// Failed: true, Class: c} with the error classified as the retry loop
// classifies by default); and each hedge that ran to a result is recorded
// as a copy (budget.Attempt{N: 2, Charged: failure.Transient}, failed or
// not). So a dependency that keeps failing earns no hedges: a TokenBucket
// refills and a GRPC budget recovers only from successes, and a Ratio
// counts each call once, however many copies it sent. As in the retry
// loop, a local rejection (retry.ErrRejected), a hedge that lost the race
// and a failure after the caller gave up are not recorded; a retry
// attempt timeout that ends the call is recorded as a Timeout.
//
// The default budget is budget.NewRatio with Ratio 0.1 and NoFloor
// ([Config.DefaultBudget]): hedges at most 10% of the requests of the last
// 10 s, twice the p95 rule's own share. The rule spends about half of it
// in steady state; the other half is for bursts, when a stalled replica
// or a latency shift the estimator has not caught up with makes many
// calls slow at once, and it still caps the extra load of a fixed delay
// gone wrong. A request counts once it has ended, so a new Hedger hedges
// only after ten requests have ended.
//
// Why a budget of its own for a hedged call that no retry loop runs:
// hedges and retries answer different failures. Hedges are for a healthy
// fleet with a slow tail and cost a steady few percent; retries are for
// failures and should be scarce during an outage. A separate budget
// keeps a latency spike from spending the retries an outage will need.
//
// # Inside a retry loop
//
// When the attempts of a retry.Policy are what is hedged, [DoAttempt]
// hedges each one and the policy keeps the books: the primary is the
// attempt, which the retry loop admits and records; each hedge is a copy
// of it, admitted by the policy's guards (a circuit breaker sees every
// request), paid for by the policy's budget as a transient retry and
// recorded with both. Retries and hedges then draw on one allowance, and
// each request is counted once, by one bookkeeper. Packages unherdhttp
// and unherdgrpc hedge this way. Do inside a retry loop's attempt,
// instead, keeps the hedges on the Hedger's own budget, which the loop
// never sees.
//
// # Back-off
//
// Every request that started a hedge and succeeded reports whether a hedge
// won. The win share is an exponentially decaying average of those
// reports, weight 1/32, starting at 1. While it is below
// Config.MinWinShare (default 0.05: fewer than one hedge in twenty wins)
// hedging is suspended, except that one request in Config.ProbeEvery
// (default 16) may still hedge, and each probe that loses doubles that
// gap, up to one request in 8*ProbeEvery (128), so that a fleet that stays
// saturated sees almost no hedges; when a probe wins, the gap returns to
// ProbeEvery, and when probes win often enough the share climbs back over
// the threshold and hedging resumes. With the p95 rule a
// healthy tail gives a share near 0.2: among requests slow enough to
// hedge, the truly stuck ones are won by their hedge and the merely slow
// ones by their primary. Under uniform slowness the share falls toward 0
// and hedging, suspended, stops adding load
// (TestBackOffUnderUniformSlowness; bench/NOTES.md, "Hedging under
// uniform slowness", has the figures).
//
// # For simulators
//
// The whole decision logic is in exported methods that take no clock, so
// a discrete-event simulator can drive the same Hedger under virtual time
// with no goroutines:
//
//	delay, ok := h.Begin()   // per request: may it hedge, after what delay?
//	h.Observe(latency)       // per successful request: start to first success
//	h.Result(hedgeWon)       // per successful request that started a hedge
//
// and admits and ends its requests with engine.AdmitRequest on
// [Hedger.Policy] (isCopy true for a hedge, which the budget pays for), as
// Do does, plus [Hedger.Delay], [Hedger.WinShare] and [Hedger.Suspended]
// to read the state. A simulator that wants the budget on its virtual
// clock passes a budget built with that clock (budget.RatioConfig.Now).
//
// # Composition
//
// Hedging runs inside one retry attempt:
//
//	v, err := retry.DoValue(ctx, p, func(ctx context.Context) (T, error) {
//		return hedge.DoAttempt(ctx, h, p, fn, cleanup)
//	})
//
// (see Inside a retry loop). Hedges are not retries: they do not count against the policy's
// attempts; a hedged attempt that fails as a whole (or whose attempt
// timeout, which bounds the primary and its hedges together, expires) is
// retried by the outer loop. See package timeout for an attempt timeout
// that tracks latency the same way.
//
// # Cost
//
// When the primary answers before the delay, Do starts no goroutine,
// allocates only the primary's cancellable context (one allocation; its
// cancellation is set up, three allocations more, only if fn reads its
// Done channel), arms and stops one timer, which the Hedger reuses across
// calls, and records the request with the budget without reading the
// clock (BenchmarkHedgePrimaryWins and BenchmarkHedgePrimaryWinsWatched;
// figures in bench/BENCHMARKS.md). With the adaptive delay it also reads
// the clock twice to measure the latency. A request that may not hedge
// (no latency known yet, or suspended and not a probe) runs fn with the
// caller's context and nothing else.
//
// Because of that reuse, a Hedger used under testing/synctest must be
// created and used inside one bubble.
package hedge
