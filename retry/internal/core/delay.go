package core

import (
	"math"
	"math/bits"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/failure"
)

// delay is the wait before retry number attempt (1 for the first retry)
// after a failure of class c whose error carries the server-directed delay
// sd (nil for none), given the random draw u. tooLong reports a server
// delay above MaxServerDelay that the policy does not clamp.
//
// The schedule's jittered delay is the floor: a server delay can make the
// wait longer, never shorter, so a thousand clients told "0" still spread
// over the schedule's window. A server delay gets up to ServerJitter of
// itself added (so a thousand clients told "5 s" do not return in one
// wall either) and, with MaxServerExtra, never takes the wait more than
// that beyond the schedule's delay.
func (p *Policy) delay(attempt int, prev time.Duration, c failure.Class, sd serverDelay, u uint64) (d time.Duration, tooLong bool) {
	if c == failure.Throttled {
		d = p.backoff.ThrottledDelay(attempt-1, prev, u)
	} else {
		d = p.backoff.Delay(attempt-1, prev, u)
	}
	if sd == nil {
		return d, false
	}
	s := max(sd.RetryAfter(), 0)
	if s > p.maxServerDelay {
		if !p.clampServer {
			return s, true
		}
		s = p.maxServerDelay
	}
	s = addSat(s, p.serverJitterOf(s, u))
	if p.maxServerExtra > 0 {
		s = min(s, addSat(d, p.maxServerExtra))
	}
	return max(d, s), false
}

// serverJitterOf draws the jitter added on top of a server delay s: up to
// ServerJitter of s, uniformly. The schedule may have used u's high bits,
// so the jitter takes them rotated.
func (p *Policy) serverJitterOf(s time.Duration, u uint64) time.Duration {
	if p.serverJitter <= 0 || s == 0 {
		return 0
	}
	var j time.Duration = math.MaxInt64
	if jf := float64(s) * p.serverJitter; jf < math.MaxInt64 {
		j = time.Duration(jf)
	}
	return backoff.Uniform(bits.RotateLeft64(u, 32), j)
}

// addSat is a+b for non-negative durations, saturating instead of
// overflowing.
func addSat(a, b time.Duration) time.Duration {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}
