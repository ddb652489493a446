// Package sleepctx defines an Analyzer that reports waits in a retry loop
// that ignore the context in scope: time.Sleep, or a bare <-time.After,
// where a context.Context (or an *http.Request, which carries one) is at
// hand. A context made inside the loop, for one attempt, does not count.
//
// When the caller gives up (its deadline passes, its client disconnects)
// the loop sleeps on and retries anyway, doing work nobody waits for. Wait
// in a select that also receives from ctx.Done(), or use retry.Do(ctx,
// ...), which stops waiting when the context is done and never starts a
// wait that would end after its deadline.
package sleepctx

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports time.Sleep in a retry loop where a context is in scope.
var Analyzer = check.Loops("sleepctx", "report waits in retry loops that ignore the context in scope", reportSleeps)
