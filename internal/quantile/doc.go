// Package quantile estimates latency quantiles from a stream of samples,
// in bounded memory, for the hedger's delay and the adaptive timeout.
//
// # Layout
//
// Samples (durations in nanoseconds) go into log-linear buckets, the
// layout of HdrHistogram (Gil Tene, http://hdrhistogram.org/): every value
// below 128 ns has its own bucket, and every power of two above is split
// into 64 equal buckets, so a bucket is at most 1/64 of its lower bound
// wide. A quantile is reported as the midpoint of the bucket that holds
// the sample of its rank, which is within 1/128 (0.78%) of that sample.
// This is the relative-error guarantee of DDSketch (Masson, Rim and Lee,
// "DDSketch: A Fast and Fully-Mergeable Quantile Sketch with
// Relative-Error Guarantees", VLDB 2019, https://arxiv.org/abs/1908.10693)
// with buckets found by integer arithmetic (bit length and shift) instead
// of a logarithm, which keeps Record to a few nanoseconds. Values from
// 1 ns to 2^43 ns (about 2.4 hours) are distinct; longer ones share the
// last bucket. The counts take 2 x 2,432 x 4 bytes, about 19 KiB, whatever
// the number of samples, and a bitmap per half marks the buckets that hold
// counts (2 x 38 words), so that a rescan or a rotation visits the few
// hundred buckets latencies fill rather than all of them.
//
// # Window
//
// There are two halves. Samples go into the current one; after every
// Window samples (4,096 by default) the older half is cleared and becomes
// the current one. Quantiles therefore describe the last Window to
// 2*Window samples, so the estimate follows a change in latency within
// two windows. Rotation is by count, not by time, so Record needs no
// clock: the callers measure a latency from two clock reads of their own
// and pass it in. The cost of counting is that at a low request rate a
// window covers a long time.
//
// # Cost
//
// Record adds into one bucket counter and one sample counter with atomic
// adds (and marks the bucket, the first time in a half-window): no lock,
// no allocation (BenchmarkQuantileRecordParallel). Every
// Window/4 samples (and at every power of two before that, so a new
// estimator has estimates early) one Record call rescans the buckets and
// stores the tracked quantiles, which Tracked returns with two atomic
// loads; a concurrent Record skips the rescan rather than wait for it.
package quantile
