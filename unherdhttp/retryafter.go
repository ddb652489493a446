package unherdhttp

import (
	"net/http"
	"strings"
	"time"
)

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
	if d, ok := decimalDuration(v, time.Second); ok {
		return d, true
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

// amzRetryAfterHeader is the AWS services' header for a server-recommended
// delay in milliseconds, which the SDKs' "Retry Behavior 2.1" honours.
const amzRetryAfterHeader = "X-Amz-Retry-After"

// parseAmzRetryAfter parses an x-amz-retry-after value: a non-negative
// decimal number of milliseconds, saturating. Anything else is ignored, as
// the SDKs ignore it.
func parseAmzRetryAfter(value string) (time.Duration, bool) {
	return decimalDuration(strings.TrimSpace(value), time.Millisecond)
}
