// Package backoff is a stub of unherd's backoff for the tests.
package backoff

import "time"

type Jitter uint8

const Full, Equal, Decorrelated, None Jitter = 0, 1, 2, 3

type Schedule struct {
	Base, Cap time.Duration
	Jitter    Jitter
	Constant  bool
	Immediate bool
}
