// Package decimal reads the unsigned decimal numbers of protocol fields
// (Retry-After's seconds, x-amz-retry-after's milliseconds, a service
// config's durations) without strconv's signs and overflow errors: a
// number of units too large for a time.Duration saturates.
package decimal

import (
	"math"
	"time"
)

// Digits reports whether every byte of s is an ASCII decimal digit (true
// for the empty string).
func Digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Duration returns s, a non-empty string of decimal digits, as that many
// units, saturating at the largest time.Duration; ok is false if s is
// empty or holds anything but digits.
func Duration(s string, unit time.Duration) (d time.Duration, ok bool) {
	if s == "" || !Digits(s) {
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
