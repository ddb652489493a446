package unherdhttp

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// maxRetryAfter is the largest delay ParseRetryAfter returns; longer ones
// saturate to it instead of overflowing. The retry loop stops rather than
// wait longer than retry.Config.MaxServerDelay.
const maxRetryAfter = time.Duration(math.MaxInt64)

// ParseRetryAfter parses the value of a Retry-After header as RFC 9110,
// section 10.2.3 (https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3)
// defines it: either delay-seconds, a non-negative decimal integer, or an
// HTTP-date (IMF-fixdate, and the obsolete RFC 850 and asctime forms that
// recipients must accept), which is turned into a delay from now. It
// reports false for a value in neither form. The delay is never negative:
// a date in the past gives 0, and a number of seconds too large for a
// time.Duration saturates. Surrounding whitespace is ignored.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return parseSeconds(v), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // Sub saturates instead of overflowing
	if d < 0 {
		d = 0
	}
	return d, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseSeconds turns a string of decimal digits into that many seconds,
// saturating at maxRetryAfter.
func parseSeconds(s string) time.Duration {
	const limit = int64(maxRetryAfter / time.Second)
	var n int64
	for i := 0; i < len(s); i++ {
		n = n*10 + int64(s[i]-'0')
		if n > limit {
			return maxRetryAfter
		}
	}
	return time.Duration(n) * time.Second
}

// amzRetryAfterHeader is the AWS services' header for a server-recommended
// delay in milliseconds, which the SDKs' "Retry Behavior 2.1" honours.
const amzRetryAfterHeader = "X-Amz-Retry-After"

// parseAmzRetryAfter parses an x-amz-retry-after value: a non-negative
// decimal number of milliseconds, saturating. Anything else is ignored, as
// the SDKs ignore it.
func parseAmzRetryAfter(value string) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" || !isDigits(v) {
		return 0, false
	}
	const limit = int64(maxRetryAfter / time.Millisecond)
	var n int64
	for i := 0; i < len(v); i++ {
		n = n*10 + int64(v[i]-'0')
		if n > limit {
			return maxRetryAfter, true
		}
	}
	return time.Duration(n) * time.Millisecond, true
}
