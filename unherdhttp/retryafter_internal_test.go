package unherdhttp

import (
	"strconv"
	"testing"
	"time"
)

// FuzzAmzRetryAfter checks that any x-amz-retry-after value parses to a
// non-negative delay or is ignored, and that a plain number of
// milliseconds comes back exactly.
func FuzzAmzRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "1500", "10000", "invalid", "-1", "1.5", " 7 ", "99999999999999999999999"} {
		f.Add(s, uint32(0))
	}
	f.Fuzz(func(t *testing.T, value string, ms uint32) {
		if d, ok := parseAmzRetryAfter(value); ok && d < 0 {
			t.Fatalf("parseAmzRetryAfter(%q) = %v", value, d)
		}
		d, ok := parseAmzRetryAfter(strconv.FormatUint(uint64(ms), 10))
		if !ok || d != time.Duration(ms)*time.Millisecond {
			t.Fatalf("parseAmzRetryAfter(%d) = %v, %v", ms, d, ok)
		}
	})
}
