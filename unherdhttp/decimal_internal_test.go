package unherdhttp

import (
	"math"
	"testing"
	"time"
)

// saturated is what a number of units too large for a Duration reads as.
const saturated = time.Duration(math.MaxInt64)

func TestDecimalDuration(t *testing.T) {
	check := func(s string, unit, want time.Duration, ok bool) {
		t.Helper()
		if d, got := decimalDuration(s, unit); d != want || got != ok {
			t.Errorf("decimalDuration(%q, %v) = %v, %v; want %v, %v", s, unit, d, got, want, ok)
		}
	}
	check("0", time.Second, 0, true)
	check("120", time.Second, 120*time.Second, true)
	check("007", time.Millisecond, 7*time.Millisecond, true)
	check("9223372036", time.Second, 9223372036*time.Second, true)
	check("9223372037", time.Second, saturated, true)
	check("99999999999999999999999", time.Millisecond, saturated, true)
	// Not a number of units: no sign, no fraction, not empty.
	check("", time.Second, 0, false)
	check("+5", time.Second, 0, false)
	check("-5", time.Second, 0, false)
	check("1.5", time.Second, 0, false)
}

func FuzzDecimalDuration(f *testing.F) {
	f.Add("123", int64(time.Second))
	f.Fuzz(func(t *testing.T, s string, unit int64) {
		if unit <= 0 {
			return
		}
		d, ok := decimalDuration(s, time.Duration(unit))
		if ok != (s != "" && digits(s)) || d < 0 {
			t.Fatalf("decimalDuration(%q, %d) = %v, %v", s, unit, d, ok)
		}
	})
}
