// Package unbounded defines an Analyzer that reports retry loops with no
// bound: no attempt limit, no deadline, nothing but the call's success
// ends them.
//
// While the dependency is down, such a loop retries for as long as the
// process lives, and every client of the dependency does the same: the
// load never drops, so the dependency cannot come back. A loop counts as
// bounded when its condition, a range over an integer, or an exit guarded
// by anything besides the attempt's error (a counter, the clock, a
// context's Done channel, a backoff library's Stop) can end it. A limit
// that is off when zero (r.max > 0 && n > r.max), on a field the package
// never sets to a constant, does not count: with the zero value of its
// struct nothing ends the loop. The fix
// is retry.Do, whose Config.MaxAttempts (3 by default) and the caller's
// context deadline bound every call. A loop that goes on after a success
// too (a reconnect or long-poll loop) is reported when nothing can stop
// it: no context, stop channel or flag is checked.
package unbounded

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports retry loops with no attempt limit and no deadline.
var Analyzer = check.Loops("unbounded", "report retry loops with no attempt limit and no deadline", reportUnbounded)
