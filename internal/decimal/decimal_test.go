package decimal

import (
	"math"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		s    string
		unit time.Duration
		want time.Duration
		ok   bool
	}{
		{"0", time.Second, 0, true},
		{"120", time.Second, 120 * time.Second, true},
		{"007", time.Millisecond, 7 * time.Millisecond, true},
		{"9223372036", time.Second, 9223372036 * time.Second, true},
		{"9223372037", time.Second, math.MaxInt64, true},
		{"99999999999999999999999", time.Millisecond, math.MaxInt64, true},
		{"", time.Second, 0, false},
		{"+5", time.Second, 0, false},
		{"-5", time.Second, 0, false},
		{"1.5", time.Second, 0, false},
	} {
		if d, ok := Duration(tc.s, tc.unit); d != tc.want || ok != tc.ok {
			t.Errorf("Duration(%q, %v) = %v, %v; want %v, %v", tc.s, tc.unit, d, ok, tc.want, tc.ok)
		}
	}
}

func FuzzDuration(f *testing.F) {
	f.Add("123", int64(time.Second))
	f.Fuzz(func(t *testing.T, s string, unit int64) {
		if unit <= 0 {
			return
		}
		d, ok := Duration(s, time.Duration(unit))
		if ok != (s != "" && Digits(s)) || d < 0 {
			t.Fatalf("Duration(%q, %d) = %v, %v", s, unit, d, ok)
		}
	})
}
