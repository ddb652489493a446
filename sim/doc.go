// Package sim is unherd's discrete-event simulator: it runs the library's
// own retry, backoff, budget and hedging objects under virtual time
// against modelled clients and dependencies, and checks what published
// sources claim about retries against what the run measures.
//
// # Common use
//
// Judge a retry policy before it meets production: [WhatIf] runs it
// beside unherd's default through an outage and a retry storm and says,
// for a closed population of clients and an open stream of calls, whether
// it is worse, better or similar, with the figures behind the judgement
// and each policy's margin against a metastable failure:
//
//	rep, err := sim.WhatIf(ctx, sim.Policy{Retry: retry.Config{MaxAttempts: 5}}, sim.Options{Seed: 1})
//	// rep.Overall, rep.Comparisons, rep.Margins, rep.Results
//
// Or run one scenario by name ([Scenarios] lists them), with its
// published parameters or others set through its [Params]' Fields, each
// of which points at one parameter:
//
//	s, _ := sim.Lookup("outage")
//	p := s.Params() // the published defaults
//	r, err := s.Run(ctx, p, sim.Options{Seed: 1})
//	// r.Rows, r.Claims, r.Charts
//
// [RunSeeds] runs a scenario on several seeds and merges the results;
// [TippingPoints] maps the metastable scenario's tipping points. The
// same seed always gives the same result, on any machine and with any
// number of workers.
//
// # What it is for
//
// Retry policies are easy to write and hard to reason about: the same
// three attempts that smooth over a dropped packet triple the load on a
// dependency that is already failing. The simulator answers "what would
// this policy do during a 30 s outage?" with numbers, before the policy
// meets production. Each [Scenario] reproduces one published experiment
// with parameters that default to the published setup, and reports, as
// [Claim] values, the source's claim beside the measurement and whether
// they agree. Holds is always computed from the run; a claim that does not
// hold is reported as such, with its costs: a guard that cuts load but
// also success, or delays recovery, does not hold. [RunSeeds] runs a
// scenario on several seeds and holds a claim only if it holds on every
// one, printing each figure's median with its range over the seeds. [WhatIf]
// judges a user's [Policy] beside unherd's default in the outage and
// storm scenarios: load against capacity, amplification, recovery and
// goodput (successful calls per second against the fault-free rate) for
// each population, and a judgement ([Comparison]) drawn from those numbers, never from a
// share of calls, whose number depends on the policy. The metastable
// scenario runs a user's policy too ([PolicyParams]), as a row whose
// callers time out after its attempt timeout.
//
// # One implementation
//
// Scenarios never copy the library's logic. Each run builds its own
// objects and calls them under the run's virtual clock:
//
//   - backoff.Schedule.Delay for Brooker's contention experiment;
//   - retryengine.Call, the retry loop's own per-call state machine (from a
//     policy built with retry.New; Admit before every attempt, Done after
//     it with the virtual Now and a draw from the run's random source),
//     which also keeps the policy's budget and guards informed, in every
//     scenario that retries (outage, storm, what-if, layers, ratelimit,
//     jitter, whose calls keep each client's previous sleep, and fleet,
//     whose calls ask each client's budget for its retries);
//   - budget.NewTokenBucket (AWS SDK standard mode) and budget.NewRatio
//     (the SRE book's per-client ratio, with Now set to the virtual
//     clock); budget.Unlimited where a row has no budget;
//   - breaker.Breaker and throttle.Adaptive, through AdmitAt and DoneAt,
//     the explicit-time forms of their admission.Guard methods;
//   - limit.Limiter, through AcquirePriority and its Token's Served and
//     Dropped at the virtual time, on the metastable scenario's server;
//   - hedge.Hedger's decision methods Begin, Observe and Result, which
//     hedge.Do itself calls around real attempts, and the engine's
//     requests (retry/engine's AdmitRequest and Request.End) on the
//     hedger's Policy, whose budget is a budget.NewRatio like its
//     default, on the virtual clock.
//
// The models around them (networks, servers, rate limiters, queues) are
// the simulator's own and are described with each scenario.
//
// # Closed populations and open streams
//
// A closed population is a fixed set of clients, each waiting for its
// answer (and retries) before making its next call; an open stream
// brings new calls at a rate that does not depend on how earlier calls
// fared. Backoff protects a dependency from a closed population, because
// a client that waits is a client that is not calling; an open stream is
// bounded only by budgets and throttling, because backing off one call
// does not slow the arrival of the next (Brooker, "What is Backoff For?",
// 2022, https://brooker.co.za/blog/2022/08/11/backoff.html). Every
// scenario says which it models (Scenario.Population); outage and storm
// run both, and label each row.
//
// # Scenarios
//
// jitter (closed): Brooker, "Exponential Backoff And Jitter", AWS
// Architecture Blog, 2015
// (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
// N clients each update one row once with optimistic concurrency: read the
// version, write it back conditionally; the server rejects a stale write.
// Every network hop takes |Normal(10 ms, 2 ms)|. After a rejected write a
// client waits one hop for the answer plus its backoff, then reads again.
// Strategies: none, exponential without jitter, full, equal and
// decorrelated jitter, base 5 ms, cap 2 s; the first retry is attempt 1
// (its ceiling is base*2: each client's write is a retryengine.Call, whose count
// starts at 0, of a schedule with base 10 ms, or 5 ms, its floor, for
// decorrelated jitter); decorrelated jitter grows from each client's
// previous sleep, starting at the base. N = 10 to 190 by 10, 100 runs
// each. Rows:
// mean calls (writes by all clients until all have written) and mean
// completion time (the last successful write's reply).
//
// outage (closed and open): Brooker, "Timeouts, retries, and backoff with
// jitter", Amazon Builders' Library, and "What is Backoff For?". 1000
// clients calling a dependency that fails fast for 30 s after 10 s of
// health and serves 20000 requests per second when up (it sheds the
// rest). Closed: each client calls, waits, thinks for an exponential
// 50 ms on average, calls again; open: 10000 calls per second arrive at
// fixed intervals. Policies, each of 8 attempts: no backoff, a fixed 1 s,
// exponential without jitter and full jitter (base 100 ms, cap 10 s), and
// full jitter with a token-bucket budget, with a circuit breaker
// (breaker.Breaker, its defaults) and with the SRE book's client-side
// adaptive throttle (throttle.Adaptive, its defaults: K = 2 over 10 s); the guards
// are called through their explicit-time AdmitAt and DoneAt before and
// after every attempt, and a local rejection ends the call. The thinking time is short so
// that most clients are waiting on the dependency when it fails: that
// shared moment is what un-jittered delays keep in step. Rows: offered
// load before and during the outage, peak (highest 100 ms bucket, per
// second), pulse (peak over mean load in the outage after its first 2 s),
// amplification (attempts per call during the outage), recovery (seconds
// after the return until a whole second's successful calls reach 95% of
// the healthy rate; -1 if not within the run), failed calls and success
// rate. A single policy and budget object is shared by all the clients,
// as one process shares one retry.Policy per dependency. The open stream's
// throttle row recovers within a second of the return at the published
// size: the throttle's window is 10 s and it does not count its own
// rejections, so the first successes after the return bring the
// rejection probability down. With the SRE book's settings
// (throttle.AdaptiveSettings{Window: 2 * time.Minute, CountRejections:
// true}) the window still held the outage's failures and rejections after
// the return, and the row recovered 115 s after it.
//
// How the outage, storm and what-if runs spend their events: a hop is
// |Normal(10 ms, 2 ms)|; an answer's way back and the next attempt's way
// out (a closed client's next call's, after its thinking) are drawn as one
// round trip, Normal(20 ms, √2 x 2 ms), which is the sum of the two hops,
// half each way, so a call's attempts reach the dependency at the same
// instants in distribution for one draw per attempt instead of two. The
// dependency's answer is decided when the attempt is sent: a failure if it
// arrives while the dependency is down, else its capacity's token bucket
// (a tenth of a second of it) decides. The bucket is asked in the order
// attempts are sent, which is not quite the order in which they arrive, so
// it is refilled to the latest arrival time it has been asked about and
// serves the capacity per second over any stretch of time. An attempt then
// costs one event, its answer, where it used to cost one for its arrival
// too. A policy without guard or budget reads no clock and touches nothing
// the other calls share, so its calls are played on at once, each step at
// its own virtual time: a retry whose attempt reaches the dependency while
// it is down is made without an event, up to the first attempt that
// arrives while it is up, which is sent by an event at its time, in order
// with everything else that uses the bucket; and the open stream's
// arrivals due before any other event are taken in by one event (the same
// run as with one event per arrival). A budget, breaker or throttle still
// hears of every attempt through an event at its time, in virtual-time
// order. bench/NOTES.md has what the model saved, and how it was checked.
//
// ratelimit (closed): figures attributed to Brooker's AWS material on
// backoff and jitter as commonly cited (3000 workers behind a
// rate-limited API use about 35% of the limit without jitter and about
// 85% with full jitter, and a job goes from hours to minutes); the
// primary text was not located, and the report says so. 3000 workers
// (--clients) each make 10 requests, one after another, to an API
// limited to 1000 requests per second (a token bucket holding 100 ms of
// it) that answers 429 beyond the limit; a 429 is a throttling error, so
// the policy backs off from its throttled base (100 ms, cap 10 s, 10
// attempts, a call out of attempts starts over). The same again with
// half and with twice the bucket (the un-jittered figure depends on it).
// For "hours to minutes", the same 3000 x 10 requests against a limit of
// 20 per second (--long-limit): 25 minutes at the limit, so that 35% of
// it would take 71 minutes and 85% of it 29. Rows: utilisation (requests
// done over the limit times the completion time), completion time,
// attempts per request, share throttled; exponential without jitter
// against full jitter. A utilisation agrees with the source's figure when
// it rounds to it, to the nearest 5 points. A longer job at the
// published limit would not test the claim: there the un-jittered
// penalty is the start, when all the workers collide at once, and it does
// not grow with the job (with --jobs 500 --long-limit 0, 25 minutes at
// the limit, both strategies end within seconds of each other at 99% of
// it); a limit tight against the workers is what keeps un-jittered
// workers in step. An attempt's answer on its way back and the next
// attempt on its way out are drawn as one round trip, Normal(2 hops,
// √2/5 of a hop), which is the sum of the two hops, the answer arriving
// halfway. Against two draws, on a small case (--clients 600 --limit 200
// --long-limit 10, seeds 1 to 10), the medians agree within the spread
// between seeds: 26.7% without jitter either way, 83.9% and 82.8% with
// full jitter (ranges 81.0-87.8 and 80.1-85.0), and 28.7 and 28.6
// minutes without jitter on the long workload, 10.5 with.
//
// fleet (open): unherd's design (a per-client floor does not bound a
// fleet), with retry budgets as Envoy and Linkerd apply them in their
// proxies (https://linkerd.io/2/reference/retries/). 100,000
// clients (20,000 in the report) each send a Poisson stream of one
// request a second, up to 3 attempts, through 10 s of health, a 10 s
// outage in which every attempt fails, and 10 s of recovery: a
// budget.Ratio per client (its floor of 10 retries a second each)
// against a fleet.Budget per client over one shared fleet.Ledger (10% and
// 10 a second for the whole fleet), each client syncing every second
// from a random phase, the round trip 1 ms. A client's requests touch
// only its own budget: with per-client floors each client is run alone,
// one after another; with the fleet budget the one event is a sync, in
// time order over the fleet, and the client's requests since its last
// sync are run when it comes, at their own instants and in order (see
// fleet.go). Every budget and the ledger see the same calls at the same
// instants as with an event per request; only the order of the random
// draws differs. Compared with an event per request on --clients 2000,
// seeds 1 to 10: per-client floors 3972 and 4008 retries a second
// (ranges 3908-4013 and 3964-4044), the fleet budget 233 either way.
//
// storm (closed and open): Google SRE book, chapters 21 "Handling
// Overload" and 22 "Addressing Cascading Failures"
// (https://sre.google/sre-book/handling-overload/,
// https://sre.google/sre-book/addressing-cascading-failures/), and the
// AWS SDKs' standard retry mode. 100 calls per second (open) or 100
// clients thinking 1 s (closed) against a backend that fails every
// request, with the default schedule: attempt limits 1 to 5 without a
// budget, then the largest limit with a 10% ratio budget (without the
// library's default floor of retries per second, as the book states it)
// and with a token bucket. Load is measured over each run's second half.
//
// layers (open): the SRE book's retry multiplication. Requests arrive at
// an edge service that calls a second, which calls a third, which calls a
// failing dependency; each layer makes up to 4 attempts: 4^3 = 64
// attempts per request reach the dependency. Retrying at the edge only
// (inner layers begin their calls with a context marked by
// retry.WithOuterRetry, so that they are nested) sends 4; a 10% ratio budget per
// layer caps the product near 1.1^3; a token bucket per layer, once empty,
// lets one attempt through. The expected counts for any failure rate are
// computed in closed form and compared with the run.
//
// hedge (open): Dean and Barroso, "The Tail at Scale", CACM 2013
// (https://doi.org/10.1145/2408776.2408794): reading 1000 keys spread over
// 100 servers, a hedge after 10 ms cut the 99.9th-percentile latency from
// 1800 ms to 74 ms for 2% more requests. Each request reads 1000 keys,
// each from a random server with 8 worker threads and log-normal service
// times (median 1 ms, sigma 1); a hedge or tied twin goes to another
// random server. Strategies: no hedge; a fixed 10 ms hedge with no budget
// and no back-off; the hedger of a zero hedge.Config (its budget on the
// run's virtual clock); tied requests, whose twin follows after two
// network delays, both copies queued, the first server to start one
// telling the other's server to drop it (--cancel-hop, 10 µs by default:
// tied requests pay when that delay is small against the service time;
// sweep it to see where they stop paying). A read's other copy is dropped
// from its server's queue once the read has its answer, but a copy
// already running runs to the end; extra_sent_pct counts copies sent,
// extra_executed_pct copies a server ran (the paper's "disk work"). Three
// fleets: "stalled", at low load, whose servers stall now and then
// (0.0005 stalls per second each, 500 ms on average, calibrated so that
// the unhedged p99.9 is of the published order; a stalled server starts
// no work); "loaded", 100 independent servers at 97% of capacity
// (--saturated-load), where a hedge can still find a shorter queue; and
// "saturated", uniformly saturated: the servers are front-ends of a
// shared bottleneck, each key living on one of 100 shards at 97%, so that
// every copy of a key queues at its shard and does the same work there:
// a second copy waits as long as the first and only adds load. All
// strategies on a fleet see the same stalls, key placement, primary
// service times and primary network delays (common random numbers), so
// rows differ only where the strategies act.
//
// The fan-out is modelled with events where they are needed, not one per
// key (see hedgemodel.go): copies travel in one message per request and
// server, a server keeps its threads' free times instead of scheduling a
// completion per copy, a request has one hedge timer, and a key's answer
// gets an event only when another copy could still beat it. Copies start
// and are cancelled at the same instants as with an event each; the one
// difference is that copies in one message share its network delay, so
// they reach their server together. On a small case (--keys 100
// --servers 20 --stall-rate 0.005 --requests 2000 --cancel-hop 250us,
// seeds 1 to 15) the per-key model this replaced and this one agree on
// the stalled fleet within the spread between seeds (medians: unhedged
// p50 12.6 and 12.5 ms; fixed hedge p99 18.0 and 17.7 ms, extra work 1.1%
// in both; tied requests p99.9 72.8 and 70.2 ms), and on the loaded fleet
// at 97% rank the strategies alike, with latencies 1 to 11% higher here
// (unhedged p50 30.1 and 33.4 ms): a queue that full feels the burstier
// arrivals.
//
// Four more savings change nothing at all (TestHedgeFleetExact compares
// them with the plain model, and the report's output is byte-identical
// with and without them): a fleet's draws common to its four strategies
// (stalls, key placement, primary service times and network delays) are
// made once, the four runs advancing together half a second of virtual
// time at a time and reading them from a shared tape (hedgetape.go);
// where nothing can drop a primary before it starts (without hedging,
// for a key the hedger did not let hedge or did not hedge at the
// request's hedge delay, or when it starts before that delay), its
// start on its first-come-first-served server is worked out as soon as
// nothing is before it in the queue, unless a stall begins first,
// instead of through a wake-up event at the instant a thread frees up
// (one event per key on the busy fleets); a fixed hedge's key is
// settled when its other copy starts or is dropped rather than by an
// event at its answer's arrival, since that hedger's delay and budget do
// not depend on when it hears; and tied requests on the saturated fleet
// are not run at all: a twin queues at its primary's own shard, behind
// it, and is dropped there without running, so their outcome is the
// unhedged one with every twin counted as sent.
//
// periodic (open): Brooker, "Timeouts, retries, and backoff with
// jitter", Amazon Builders' Library, on jitter for periodic work, and
// systemd.timer's RandomizedDelaySec. 10000 processes (--clients) each
// run a one-request job every minute, each driving its own
// periodic.Series: on the minute without jitter (cron); started within 5 s
// by one deploy, without jitter (deploy); within a 10 s window after each
// minute (window); and spread over the whole minute by full, equal and
// decorrelated jitter and by a fixed phase per process. Rows: the busiest
// second, the 99th percentile second, the mean per second, the share of
// requests beyond the dependency's capacity (500 per second) in their
// second, and the mean lag behind the minute.
//
// metastable (open): Huang et al., "Metastable Failures in the Wild", OSDI
// 2022 (https://www.usenix.org/conference/osdi22/presentation/huang-lexiang),
// its retry experiment, and its artifact
// (https://github.com/lexiangh/Metastability, Retry_Metastability); the
// states are Bronson et al.'s ("Metastable Failures in Distributed
// Systems", HotOS 2021). A short trigger makes requests slow, callers
// time out and resend, the server still works on the requests they
// abandoned, and the resends keep it overloaded after the trigger has
// gone. From the paper: an open stream of 8,300 new requests per second
// (--rate), a client timeout of 3 s (--timeout), resends made at once and
// without limit, a cut to the server's CPU as the trigger, and four
// outcomes: a 78% cut for 10 s at full load recovers, 80% for 10 s stays
// down, 80% for 9 s recovers, and 80% for 10 s at a load 30% lower
// (5,810/s) recovers. The rest is this model's: a server of 22 workers
// (--threads) taking requests from one FIFO queue, each for an
// exponential service time of mean 1 ms (--service) at full CPU; a
// request whose service starts during the trigger takes 1/(1-cut) as
// long. New requests arrive as a Poisson stream. The calibration is the
// one number the paper does not give, the server's capacity over the
// load, here 22,000/8,300 = 2.65: the four outcomes pin it. A 10 s
// trigger builds a queue whose oldest requests time out in any case; what
// decides the outcome is whether the resends' load, with the queue of
// requests whose callers have gone, can be served once the trigger ends.
// The margin is narrow: on seed 1, --service 1.03ms (2.57 times the load) keeps the 78% run down
// too, and --service 960us (2.76 times) brings the 80% run back; 2.65
// sits between them. With its random arrivals and service times the
// simulation gives the four outcomes on each of the report's seeds
// (TestMetastableOutcomes). Every call is a
// retryengine.Call: Huang et al.'s client resends through a policy of
// unlimited attempts (math.MaxInt), the Immediate schedule and
// budget.Unlimited; unherd's default is retry.New with a retry.Config
// whose only field set is AttemptTimeout, the client's timeout (3
// attempts, full jitter from 50 ms, the token-bucket budget), one policy
// shared by every call. An attempt unanswered after
// the timeout is a failure of retry's Timeout class. The server serves
// every request it has queued, the abandoned ones too. The last row adds
// the server's limit.Limiter (limit.New with the zero Config: Gradient):
// each request asks AcquirePriority (Normal) on arrival and is refused at
// once, a throttling error for the client, when the limit is full; a
// served request releases its token with Served, and a queued request
// whose caller's deadline has passed is dropped by the worker that
// reaches it (Dropped), without service. Rows, for the four runs and for
// unherd's default, with and without the limiter, under the trigger that
// keeps the first client down: goodput (answers to callers still waiting,
// per second) over the 5 s before the trigger, during it and over the run's
// last 10 s (--after, 60 s after the trigger by default); the outcome
// (recovers: goodput over the last 10 s at least 95% of the offered
// load; stays down: less; never healthy: less already before the
// trigger); the seconds from the trigger's end until every second's
// goodput is back; the attempts per second over the last 10 s; the
// longest queue; the share of the requests served whose caller had gone;
// requests shed and refused. unherd's default recovers within a couple
// of seconds of the trigger's end: its token bucket runs dry during the
// trigger, so the load after it is the stream itself. With the limiter,
// the server refuses what it cannot take during the trigger and is back
// as soon as it ends, having served no caller that had gone.
//
// A run stops early once it is provably down, and says so (stopped_s;
// its queue peak, wasted work and load after are then measured up to the
// stop, the load over the 10 s before it): without a limiter, once the
// queue holds 1.5 times the requests the workers can complete at full
// CPU in the rest of the run, at least a timeout before the judged last
// 10 s, no later attempt can be answered before the run ends and every
// answer in the judged stretch goes to a caller who has gone; for
// callers who resend at once and never give up, sooner, once the queue
// is past the timeout at its head and long enough, and enough callers
// wait, that every timeout-long stretch from then on sends at least as
// much as the workers complete (the model's source, metastablemodel.go,
// gives both proofs; each fails with a chance under 1e-9, by a Chernoff
// bound on the completions). The stay-down case held a queue of about 5
// million requests by the end of the run and took seconds a seed; it
// stops at about 33 s with a third of a million.
//
// The scenario's chart is its tipping-point map ([TippingPoints]): for
// each of the three policies of its rows and for each cut to the CPU of
// 60% to 95% in steps of 5 points (--map-cuts), the shortest of the
// trigger lengths 2 to 30 s (--map-lengths) that leaves the server down,
// found by bisection over the lengths, each trigger on a stream of its
// own; two claims judge unherd's goal that neither the default nor the
// default with the limiter stays down after any of them. The map's runs
// stop as down as the rows' do, and stop as recovered once 10 s in a row
// after the trigger each had the goodput of a recovered run and the
// queue is empty. With several seeds the map runs once, on the first.
//
// # Packages
//
// Package sim holds the scenarios, each one define call with its
// parameters (an unexported struct whose tags name each parameter and
// its checks, reached through Params.Fields), its run and its claims
// (each built and merged over seeds in claim.go), and the what-if
// analysis; the event engine the runs drive is internal
// (sim/internal/engine). The command line (cmd/unherd) owns the flags:
// a scenario's parameters reach it as Params.Fields, and a policy file
// as a [Policy], whose retry settings are a retry.Config.
//
// # Engine and determinism
//
// Each run is one goroutine's loop (sim/internal/engine) over a radix heap of events (no event
// is scheduled before the present, so a time's bits name its bucket):
// events due at the same instant run in the order they were scheduled, so
// ties never depend on the queue's layout. Events are plain values in
// typed slices (no closure, no allocation per event once the queue has
// grown); BenchmarkEngine measures the loop. Work that would be the
// very next event (due now, with nothing else due now) is done at once
// instead of through the queue, with the same result: a call's first
// attempt, and a retry without delay, in the outage, storm and what-if
// runs. Virtual time
// is a time.Duration since an epoch, 4 March 2015 at midnight UTC;
// objects that read a clock are given the run's virtual Now. Every random draw comes from the run's PCG
// source, seeded with Options.Seed and the run's index in its sweep, so a
// run's result depends on nothing else. A sweep spreads its runs over
// Options.Workers goroutines and places each result by index: the same
// Params and Seed give byte-identical results whatever the number of
// workers or the machine. Results do change when the library's objects
// change behaviour: that is the point, and the golden files in testdata
// (go test ./sim -update) record it.
package sim
