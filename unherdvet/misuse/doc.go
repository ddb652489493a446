// Package misuse defines an Analyzer that reports uses of unherd that undo
// what it is for, outside test files:
//
//   - a backoff.Schedule without jitter (Jitter: backoff.None) or without
//     delays (Immediate: true): clients that failed together retry
//     together;
//   - a retry budget turned off (budget.Unlimited): during an outage
//     every call makes all its attempts, multiplying the load on a
//     dependency that is already down;
//   - a retry policy or budget built per call (retry.New, retry.Default,
//     budget.NewTokenBucket, budget.NewRatio, budget.NewGRPC,
//     unherdhttp.NewTransport inside a loop or an HTTP handler; retry.New
//     or retry.Default used by the same function that builds it, outside
//     main and init): each starts with a full budget that sees one call,
//     so the budget never stops a storm.
//
// Build a Policy (or Transport) once per dependency, in a package variable
// or a field, and share it.
package misuse

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports misuse of unherd's backoff, budget and retry packages.
var Analyzer = check.Files("misuse", "report unherd schedules without jitter, budgets turned off, and policies built per call", reportMisuse)
