package retry

import (
	"math"
	"math/bits"
	"time"
)

// delay is the wait before retry number attempt (1 for the first retry)
// after a failure of class c: the server-directed delay sd, if there is
// one, else the schedule's. tooLong reports a server delay above
// MaxServerDelay.
func (p *Policy) delay(attempt int, prev time.Duration, c Class, sd ServerDelay, u uint64) (d time.Duration, tooLong bool) {
	if d, ok, tooLong := p.serverDelay(sd, u); ok {
		return d, tooLong
	}
	if c == Throttled {
		return p.backoff.ThrottledDelay(attempt-1, prev, u), false
	}
	return p.backoff.Delay(attempt-1, prev, u), false
}

// serverDelay returns the server-directed delay sd carries, with up
// to ServerJitter of it added on top (saturating, never negative). tooLong
// reports a request above MaxServerDelay: the loop stops rather than come
// back before the server allowed.
func (p *Policy) serverDelay(sd ServerDelay, u uint64) (d time.Duration, ok, tooLong bool) {
	if sd == nil {
		return 0, false, false
	}
	d = max(sd.RetryAfter(), 0)
	if d > p.maxServerDelay {
		return d, true, true
	}
	// The schedule may have used u's high bits; take the jitter from its
	// bits rotated, scaled to [0, ServerJitter*d].
	var j time.Duration = math.MaxInt64
	if jf := float64(d) * p.serverJitter; jf < math.MaxInt64 {
		j = time.Duration(jf)
	}
	hi, _ := bits.Mul64(bits.RotateLeft64(u, 32), uint64(j)+1)
	if time.Duration(hi) > math.MaxInt64-d {
		return math.MaxInt64, true, false
	}
	return d + time.Duration(hi), true, false
}
