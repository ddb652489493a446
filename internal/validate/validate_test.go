package validate

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var errInvalid = errors.New("x: invalid")

func TestNonNegative(t *testing.T) {
	ok := NonNegative(errInvalid, Field{Name: "N", Value: 0}, Field{Name: "D", Value: time.Second})
	if ok != nil {
		t.Fatalf("valid fields: %v", ok)
	}
	err := NonNegative(errInvalid, Field{Name: "N", Value: 1}, Field{Name: "D", Value: -time.Second, Hint: "; use 0"},
		Field{Name: "M", Value: -1})
	if !errors.Is(err, errInvalid) || err.Error() != "x: invalid: D -1s is negative; use 0" {
		t.Fatalf("got %v, want the first negative field named, wrapping errInvalid", err)
	}
}

func TestProtoDuration(t *testing.T) {
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
		if got, err := ProtoDuration(tc.in); err != nil || got != tc.want {
			t.Errorf("ProtoDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "s", "-s", ".s", "2", "2ms", "1m", "1e3s", "+1s", "1.0000000001s", "0x10s", " 1s", "1s ", "1.2.3s", "99999999999s"} {
		_, err := ProtoDuration(in)
		if err == nil {
			t.Errorf("ProtoDuration(%q) succeeded, want an error", in)
			continue
		}
		if !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("ProtoDuration(%q): %v, want the input quoted in the error", in, err)
		}
	}
	if _, err := ProtoDuration("2m"); !errors.Is(err, ErrDurationSyntax) {
		t.Errorf("ProtoDuration(\"2m\"): %v, want ErrDurationSyntax", err)
	}
}

// Whatever the input, ProtoDuration either refuses it or returns what
// time.ParseDuration gives for it, and takes only the proto form.
func FuzzProtoDuration(f *testing.F) {
	for _, s := range []string{"2s", "0.25s", "-1.5s", "1m", "1e3s", ".s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ProtoDuration(s)
		if err != nil {
			return
		}
		want, perr := time.ParseDuration(s)
		if perr != nil || d != want {
			t.Fatalf("ProtoDuration(%q) = %v, time.ParseDuration gives %v, %v", s, d, want, perr)
		}
		if !strings.HasSuffix(s, "s") || strings.ContainsAny(s, "+eEhmunµ") {
			t.Fatalf("ProtoDuration(%q) took a string outside the proto form", s)
		}
	})
}
