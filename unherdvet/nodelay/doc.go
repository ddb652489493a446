// Package nodelay defines an Analyzer that reports retry loops against
// another service that do not wait between attempts.
//
// When the dependency fails, a loop that tries again at once sends its
// next attempt as fast as the network answers, and every client does the
// same: the failing service gets the whole load again, multiplied by the
// attempts, within milliseconds. A wait that grows and is drawn at random
// (capped exponential backoff with full jitter) gives it room to recover.
// The fix is retry.Do, whose default policy waits so.
//
// Only loops whose attempt goes to another service (an HTTP request, a
// call taking a context or gRPC call options, a dial, a method of a
// client package that talks to the network itself or through a package of
// its own repository, or a function value the loop's function is handed
// when the package's callers hand it such calls) are reported, and
// only when nothing between attempts might wait: no sleep or timer, no
// receive or select, no call given a time.Duration or named for waiting
// (Wait, Sleep, Backoff, Pause, Delay, Throttle), and no other call to a
// service (reconnecting, refreshing a token, re-reading a record after a
// conflict), which takes its own time and changes what is tried. A loop
// that goes round at once only on an end of stream (io.EOF, an error
// whose text ends in "EOF") is spinning over a connection already
// closed, not sending requests, and is not reported either. Nor is a
// bounded loop that only replaces a dead connection: its failure path
// drops the connection (c.conn = nil), and the next round makes a new one
// under a test for it and returns when that fails, so a service that is
// down is not called again (database/sql's driver.ErrBadConn rule).
package nodelay

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports retry loops against another service that do not wait
// between attempts.
var Analyzer = check.Loops("nodelay", "report retry loops against another service that try again at once, with no wait between attempts", reportImmediate)
