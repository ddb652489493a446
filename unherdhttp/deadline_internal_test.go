package unherdhttp

import (
	"strings"
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"850", 850 * time.Millisecond, true},
		{" 850 ", 850 * time.Millisecond, true},
		{"86400000", 24 * time.Hour, true},
		{"86400001", 24 * time.Hour, true},
		{"99999999999999999999999999", 24 * time.Hour, true},
		{"", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"850m", 0, false},
		{"1e3", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseTimeout(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFormatTimeout(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                   "0",
		0:                              "0",
		999 * time.Microsecond:         "0",
		1500*time.Millisecond + 999999: "1500",
		time.Duration(1<<63 - 1):       "9223372036854",
	} {
		if got := formatTimeout(d); got != want {
			t.Errorf("formatTimeout(%v) = %q, want %q", d, got, want)
		}
	}
}

func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"0", "850", " 12 ", "86400001", "99999999999999999999999", "", "-1", "1.5", "850m", "\t7\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseTimeout(s)
		if d < 0 || d > maxHeaderTimeout {
			t.Fatalf("parseTimeout(%q) = %v, outside [0, %v]", s, d, maxHeaderTimeout)
		}
		trimmed := strings.TrimSpace(s)
		if ok != (trimmed != "" && digits(trimmed)) {
			t.Fatalf("parseTimeout(%q) ok = %v", s, ok)
		}
		if !ok {
			if d != 0 {
				t.Fatalf("parseTimeout(%q) = %v with ok false", s, d)
			}
			return
		}
		if d < maxHeaderTimeout {
			if back, _ := parseTimeout(formatTimeout(d)); back != d {
				t.Fatalf("parseTimeout(%q) = %v does not survive formatting (%v)", s, d, back)
			}
		}
	})
}
