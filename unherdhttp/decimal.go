package unherdhttp

import (
	"math"
	"time"
)

// The unsigned decimal numbers of protocol fields (Retry-After's seconds,
// x-amz-retry-after's milliseconds, a deadline header's milliseconds) are
// read without strconv's signs and overflow errors: a number of units too
// large for a time.Duration saturates.

// digits reports whether every byte of s is an ASCII decimal digit (true
// for the empty string).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decimalDuration returns s, a non-empty string of decimal digits, as that many
// units, saturating at the largest time.Duration; ok is false if s is
// empty or holds anything but digits.
func decimalDuration(s string, unit time.Duration) (d time.Duration, ok bool) {
	if s == "" || !digits(s) {
		return 0, false
	}
	limit := int64(math.MaxInt64 / unit)
	var n int64
	for i := 0; i < len(s); i++ {
		n = n*10 + int64(s[i]-'0')
		if n > limit {
			return math.MaxInt64, true
		}
	}
	return time.Duration(n) * unit, true
}
