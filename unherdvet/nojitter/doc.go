// Package nojitter defines an Analyzer that reports retry loops whose
// wait between attempts is not random: a constant, a value fixed before
// the loop, or one that grows (exponentially or linearly) without jitter.
//
// Clients that failed together, because the dependency failed them
// together, wait the same delay and retry together: every retry is a
// new wall of load at the same instant. Random (full) jitter spreads
// them out. The fix is retry.Do with the default policy, whose schedule
// is capped exponential backoff with full jitter (backoff.Full).
//
// The delay is followed through constants, variables, struct fields, an
// index into a list of delays ([]time.Duration{1s, 2s, 5s}), the
// package's own functions and methods (whose returns are classified the
// same way; for a method of an interface, the implementations the
// receiver is given in the package, such as a configuration's default
// policy, when the package shows them all), a delay the failure path sets
// before going round to a wait at the top of the loop, and a backoff
// struct's method (b.Step(), s.backoff.Duration()) when the struct, held
// in a variable or a field, has a jitter field (Jitter,
// RandomizationFactor) left zero. A delay the
// analyzer cannot follow (the result of a function call it does not know,
// such as a backoff library's NextBackOff) is assumed to be fine; so is
// any delay computed with math/rand, math/rand/v2 or crypto/rand, and one
// that follows the server: a field such as Interval or RetryAfter of a
// response (the OAuth device flow's polling interval). When one wait of a
// loop is random or follows the server, the loop is not reported.
//
// Lockstep only hurts when many clients hit one remote dependency, so a
// loop whose attempt acts on this machine (net.Listen, a file operation,
// a file lock, a local command; or a function of the package that makes
// only such calls) is not reported, nor is a server's accept loop, which
// backs off on a temporary error of its own listener.
package nojitter

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports retry loops that wait a constant or non-random delay.
var Analyzer = check.Loops("nojitter", "report retry loops that wait a constant or non-random delay between attempts", reportLockstep)
