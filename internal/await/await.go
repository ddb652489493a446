// Package await bounds a test's waits. A bare receive in a test hangs
// until go test's own ten-minute timeout when the machine is loaded or
// the code is wrong; Recv fails the test after Timeout instead, naming
// what it waited for. Until polls, within a limit, what has no event to
// wait on.
package await

import (
	"testing"
	"time"
)

// Timeout is how long Recv waits. It is far longer than any wait in a
// passing test, even on a loaded machine, and far shorter than go test's
// default timeout.
const Timeout = 30 * time.Second

// Recv returns the next value received from ch (the zero value when ch is
// closed). When none arrives within Timeout it fails the test with
// t.Fatalf, saying it waited for what.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("waited %v for %s", Timeout, what)
		panic("unreachable")
	}
}

// Within reports whether ch delivered a value, or was closed, within
// Timeout. It reports rather than fails, for a goroutine that must not
// call t.Fatal (a handler, a fake server) and says what it waited for
// in its own way: with t.Errorf, or an error to its caller.
func Within[T any](ch <-chan T) bool {
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return false
	}
}

// Until calls cond now and then every interval until it returns true,
// and reports whether it did within limit (cond is asked once more when
// limit has passed). It is for what a test must poll: a state outside
// the test's goroutines with no event to wait on, such as another
// process, a server's counters or a database's clock. It waits on a
// ticker and a deadline, in real time, or in a synctest bubble's time.
func Until(limit, interval time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}
