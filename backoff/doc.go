// Package backoff computes how long to wait before a retry.
//
// A [Schedule] is a small value: capped exponential growth
// temp = min(Cap, Base*Multiplier^n) with a [Jitter] applied, or a
// constant delay; the Multiplier is 2 unless set.
// Its zero value is the safe default: full jitter, base 50 ms, throttled
// base 1 s, cap 20 s. A Schedule holds no state, so one value can be shared
// by any number of goroutines; the only state a schedule needs (the
// previous delay, for decorrelated jitter) is kept by the caller's loop and
// passed in.
//
// The delay is a pure function of its inputs: the retry number, the
// previous delay, and a 64-bit random draw supplied by the caller. Tests
// and simulations pass exact draws; production code passes
// rand.Uint64 (see [Draw]). No method allocates, and no input,
// however large, overflows: a delay is never negative and never above Cap.
//
// # Which jitter
//
// Full jitter (uniform in [0, temp]) is the default because it does the
// least total work and finishes soonest when many clients contend for one
// resource; Equal keeps at least half of temp (use it when a minimum wait
// matters); Decorrelated grows from the previous delay rather than the
// retry count. None exists for tests and for showing why synchronised
// retries are harmful: many clients that failed together come back
// together. See Marc Brooker, "Exponential Backoff And Jitter", AWS
// Architecture Blog, 2015:
// https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/
//
// # Numbering
//
// Delay's n is the zero-based index of the retry: the first retry uses
// n = 0, so its ceiling is Base. The retry package follows that rule.
// A caller reproducing a setup that starts at 2^1 (as Brooker's experiment
// does) passes n = 1 for its first retry.
package backoff
