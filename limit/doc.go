// Package limit caps how many requests a server (or a client) has in
// flight at once, and finds that cap from the latency the requests see:
// an adaptive concurrency limit. A request over the limit is refused at
// once, before any work starts, so an overloaded server answers the
// requests it admits in time instead of queueing them all.
//
// The common use, in a handler:
//
//	l, err := limit.New(limit.Config{}) // adaptive, Gradient2's defaults
//	...
//	tok, ok := l.Acquire(time.Now())
//	if !ok {
//		// refuse: 503 with Retry-After, or RESOURCE_EXHAUSTED
//	}
//	err := serve(ctx)
//	switch {
//	case ctx.Err() != nil:
//		tok.Ignore() // the client went away: not a sample
//	case errors.Is(err, errOverloaded), errors.Is(err, context.DeadlineExceeded):
//		tok.Dropped(time.Now())
//	default:
//		tok.Served(time.Now())
//	}
//
// Every admitted request is released exactly once, with Served (a latency
// sample), Dropped (an overload signal) or Ignore (no sample): the shape of
// Netflix concurrency-limits' Limiter, whose listener must be told how the
// request ended, as a value [Token] so that neither step allocates. Time
// is an argument, never read from a clock, so tests and the simulator
// drive the same code in virtual time.
//
// # Priorities and the wait
//
// A request has a [Priority]: [Critical], [Normal] (the zero value) or
// [Sheddable]. [Limiter.AcquirePriority] refuses lower classes first:
// Config.CriticalShare (10% by default) of the limit is kept for
// Critical requests, which may fill the whole limit; Normal requests may
// fill all but that reserve, and Sheddable ones all but twice it. A
// server finds the priority from the request (a function of the route or
// the caller), or from the [PriorityHeader] a client sets, trusting it
// only from callers it trusts; [WithPriority] carries it in a context.
//
// [Limiter.Wait] adds an optional bounded wait: with Config.MaxWait set,
// a request that finds no slot free waits in a queue for one another
// request releases, and the slot is handed to it directly. A waiter whose
// context ends leaves the queue at once with the context's cause: the
// server never starts, or keeps queued, work whose caller has gone. The
// queue follows "Fail at Scale" (Ben Maurer, ACM Queue 13(8), 2015,
// https://queue.acm.org/detail.cfm?id=2839461): a controlled delay after
// CoDel (Kathleen Nichols and Van Jacobson, "Controlling Queue Delay",
// ACM Queue 10(5), 2012, https://queue.acm.org/detail.cfm?id=2209336),
// under which a queue that has not been empty at any moment in the last
// 100 ms is congested and its waiters give up after 5 ms instead of
// MaxWait, since a standing queue only adds delay; and an adaptive LIFO,
// which serves a congested queue newest first, since the newest waiter
// has the most time left before its caller gives up, and the oldest are
// likely already lost. A released slot goes to the highest priority with
// room first.
//
// The same limiter bounds what a client has in flight to one dependency:
// [Limiter.Guard] is a retry.Guard, so every attempt, retries included,
// takes a slot, and a refusal ([ErrLimited], a local rejection) is never
// retried.
//
// # Algorithms
//
// [Fixed] is a constant limit, a bulkhead. [AIMD] and [Gradient2] adapt;
// each is a small stateful [Algorithm] whose Update is a function of its
// state and one [Sample], after Netflix concurrency-limits
// (https://github.com/Netflix/concurrency-limits): AIMDLimit and
// Gradient2Limit.
//
// [AIMD] adds 1 per served request while at least half the limit is in
// use and multiplies the limit by 0.9 on a drop or a request slower than
// its Timeout. It finds the limit only from drops and timeouts.
//
// [Gradient2], the default, compares a long-term average of the latency
// with a short-term one; when the short-term latency exceeds the long-term
// by more than the tolerance, requests are queueing, and the limit shrinks
// by their ratio (never below half per update); otherwise it grows by a
// small queue allowance:
//
//	gradient = clamp(Tolerance * longRTT / shortRTT, 0.5, 1)
//	limit    = (1-Smoothing)*limit + Smoothing*(limit*gradient + QueueSize)
//
// With steady latencies its limit settles at about
// Tolerance*capacity + QueueSize: with the defaults, a server that can
// run 8 requests at once gets a limit near 11, with at most 20% of its
// latency spent queueing. Noisy latencies hold it lower: the short-term
// average's spread lowers the gradient now and then even without a
// queue.
//
// # Defaults and their sources
//
// Gradient2's MaxLimit (200) and its rules (the clamp at 0.5, no growth
// while less than half the limit is in flight, the long-term average cut
// by 5% per sample when it is more than twice the short-term one, a
// 10-sample plain-average warm-up) are Netflix's. Its InitialLimit (20) is
// Netflix's too, but MinLimit is 1, not 20: a server with a few workers
// must be able to go below 20. The other defaults differ from Netflix's,
// for a server with a few to a few hundred workers:
//
//   - ShortWindow 10 (Netflix: 1, each sample alone) and Tolerance 1.2
//     (Netflix: 1.5). With one-sample comparisons, the limit follows the
//     latency's spread rather than the queue: for lognormal service
//     times with p90 50 ms and p99 150 ms, a single sample exceeds 1.5
//     times the mean often enough that the limit is set by the noise.
//   - LongWindow 30000 samples (Netflix: 600). A 600-sample average
//     follows the queueing delay within a couple of seconds at a few
//     hundred requests per second, after which queueing no longer lowers
//     the gradient and the limit climbs to MaxLimit; a long baseline
//     keeps the queueing visible. It still falls quickly when latency
//     drops (the 5% cut), but a lasting rise in service time reaches it
//     over LongWindow samples, during which the limit is lower than it
//     needs to be.
//   - QueueSize 1.5 and Smoothing 0.02 (Netflix: 4 and 0.2): the limit
//     grows by at most 0.03 per sample and falls by at most 1% of itself,
//     so at hundreds of samples a second it still moves by several
//     requests a second, and it swings by a few requests rather than
//     tens.
//
// The test TestConvergence runs these defaults on a model server with 8
// workers (lognormal service time, p90 50 ms, p99 150 ms) at twice its
// capacity, then 4 workers, then 8 again; it logs the limit's mean and
// range per seed and checks that the mean stays in [6, 12] with 8
// workers and comes down towards 6 with 4.
//
// AIMD's BackoffRatio (0.9), MaxLimit (200) and Timeout (5 s) are
// Netflix's AIMDLimit defaults; InitialLimit is 20 as there, and MinLimit
// is 1 for the same reason as above.
//
// # Cost
//
// Acquire is a compare-and-swap on the in-flight count against the
// current limit; a release is an atomic decrement, and, for a sample
// that reaches an adaptive algorithm, a short mutex around its Update so
// that every sample counts. Neither allocates. Wait with a slot free is
// Acquire after a clock read; a release checks an atomic count of
// waiters and takes the queue's mutex only when someone waits.
package limit
