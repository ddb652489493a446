package protodur

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"2s", 2 * time.Second},
		{"0.25s", 250 * time.Millisecond},
		{".5s", 500 * time.Millisecond},
		{"1.s", time.Second},
		{"-1.5s", -1500 * time.Millisecond},
		{"0.000000001s", time.Nanosecond},
		{"0s", 0},
	} {
		if got, err := Parse(tc.in); err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "s", "-s", ".s", "2", "2ms", "1m", "1e3s", "+1s", "1.0000000001s", "0x10s", " 1s", "1s ", "1.2.3s", "99999999999s"} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", in)
			continue
		}
		if !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("Parse(%q): %v, want the input quoted in the error", in, err)
		}
	}
	if _, err := Parse("2m"); !errors.Is(err, ErrSyntax) {
		t.Errorf("Parse(\"2m\"): %v, want ErrSyntax", err)
	}
}

// Whatever the input, Parse either refuses it or returns what
// time.ParseDuration gives for it, and takes only the proto form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2s", "0.25s", "-1.5s", "1m", "1e3s", ".s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		want, perr := time.ParseDuration(s)
		if perr != nil || d != want {
			t.Fatalf("Parse(%q) = %v, time.ParseDuration gives %v, %v", s, d, want, perr)
		}
		if !strings.HasSuffix(s, "s") || strings.ContainsAny(s, "+eEhmunµ") {
			t.Fatalf("Parse(%q) took a string outside the proto form", s)
		}
	})
}
