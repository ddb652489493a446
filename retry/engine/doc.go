// Package engine drives a retry.Policy one step at a time, for an
// integration that cannot hand the policy a function: a transport, an
// interceptor, a stream, a simulator. It is the retry loop's own engine,
// the one retry.Policy.Do and retry.DoValue run, taken apart: nothing here
// is a second implementation.
//
// A user retrying a call of their own needs retry.Policy.Do,
// retry.DoValue, or, for a protocol of their own, retry.Policy.Attempts,
// whose loop cannot leave a guard's ticket, a half-open probe or a
// budget's credit behind however the loop body ends. This package is the
// step below: [Begin] starts a [Call]; each attempt is admitted
// ([Call.Admit]), run between [StartAttempt] and [Attempt.End], and
// reported with [Call.Succeeded] or [Call.Failed] (which waits), or, in
// virtual time, with [Call.Done], which takes the time, the deadline and
// the random draw as arguments and never sleeps. Every step must be
// taken in that order, exactly once per attempt: the loop in retry does
// that for its users, and an integration that drives the steps itself
// owns that duty.
//
// A request the call does not count as an attempt of its own, a hedge
// sent while the attempt in flight has not answered, is a [Request]
// ([AdmitRequest]): the policy's guards admit it and its budget pays for
// it and records it, as they do each attempt, so every request a call
// sends reaches one bookkeeper. Package hedge sends them (hedge.DoAttempt).
//
// An integration tells the call what a failure was with retry.Judge (a
// verdict carried by the error), or lets [DefaultClassify] read it.
// Guards (package admission) reject an attempt with an error made by
// [NewRejection], which no retry repeats.
package engine
