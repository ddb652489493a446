package sim

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
)

func TestIntListSet(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []int // nil: an error
	}{
		{"one", "7", []int{7}},
		{"several", "10,20,30", []int{10, 20, 30}},
		{"spaces around items", " 1 , 2 ,3 ", []int{1, 2, 3}},
		{"empty items skipped", "1,,2,", []int{1, 2}},
		{"signs", "-5,+3", []int{-5, 3}},
		{"largest int", "9223372036854775807", []int{9223372036854775807}},
		{"empty", "", nil},
		{"only commas", " , ,", nil},
		{"not an integer", "1,x,3", nil},
		{"fraction", "1.5", nil},
		{"overflow", "9223372036854775808", nil},
		{"inner space", "1 2", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := []int{42}
			l := &intList{flag: "clients", v: &v}
			err := l.Set(tc.in)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("Set(%q) = nil, list %v; want an error", tc.in, v)
				}
				if !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "--clients") {
					t.Errorf("Set(%q) = %v; want an error wrapping ErrInvalidParams naming --clients", tc.in, err)
				}
				if diff := cmp.Diff([]int{42}, v); diff != "" {
					t.Errorf("Set(%q) failed but changed the list (-before +after):\n%s", tc.in, diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Set(%q) = %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, v); diff != "" {
				t.Errorf("Set(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestIntListFlag checks the list as the command line uses it: the default
// shown is the current list, and Parse replaces it.
func TestIntListFlag(t *testing.T) {
	p := defaultStormParams()
	fs := flag.NewFlagSet("storm", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p.Register(fs)
	if got, want := fs.Lookup("attempts").DefValue, (&intList{v: &p.Attempts}).String(); got != want || got == "" {
		t.Errorf("--attempts default shown as %q, want %q", got, want)
	}
	if err := fs.Parse([]string{"--attempts", "2, 4"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{2, 4}, p.Attempts); diff != "" {
		t.Errorf("--attempts (-want +got):\n%s", diff)
	}
	if err := fs.Parse([]string{"--attempts", "two"}); err == nil || !strings.Contains(err.Error(), "--attempts") {
		t.Errorf("--attempts two: error %v, want one naming --attempts", err)
	}
}

// FuzzIntList checks that Set never panics, that a list it accepts comes
// back unchanged through String and Set, and that what it rejects is an
// error wrapping ErrInvalidParams that names the flag and leaves the list
// as it was.
func FuzzIntList(f *testing.F) {
	for _, s := range []string{"10,20", " 1 , 2 ", "", ",", "a", "1,,2", "-5,+3", "0x10",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "1,2,x", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		before := []int{42}
		v := slices.Clone(before)
		l := &intList{flag: "clients", v: &v}
		if err := l.Set(s); err != nil {
			if !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "--clients") {
				t.Fatalf("Set(%q) = %v; want an error wrapping ErrInvalidParams naming --clients", s, err)
			}
			if !slices.Equal(v, before) {
				t.Fatalf("Set(%q) failed but changed the list to %v", s, v)
			}
			return
		}
		if len(v) == 0 || len(v) > strings.Count(s, ",")+1 {
			t.Fatalf("Set(%q) accepted %d integers from %d items", s, len(v), strings.Count(s, ",")+1)
		}
		str := l.String()
		var back []int
		if err := (&intList{flag: "clients", v: &back}).Set(str); err != nil {
			t.Fatalf("Set(%q) gave %v, whose String %q is rejected: %v", s, v, str, err)
		}
		if !slices.Equal(back, v) {
			t.Fatalf("Set(%q) gave %v; through String %q it became %v", s, v, str, back)
		}
	})
}

func TestPolicyFields(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want map[string]any
	}{
		{"zero is the defaults", Policy{},
			map[string]any{"name": "yours", "attempts": 3, "base": "50ms", "cap": "20s", "jitter": "full", "budget": "token"}},
		{"ratio budget with its default share and a timeout",
			Policy{Name: "mine", Attempts: 4, Backoff: backoff.Schedule{Base: 10 * time.Millisecond, Cap: time.Second, Jitter: backoff.None},
				Budget: "ratio", AttemptTimeout: 300 * time.Millisecond},
			map[string]any{"name": "mine", "attempts": 4, "base": "10ms", "cap": "1s", "jitter": "none", "budget": "ratio",
				"ratio": 0.1, "attempt_timeout": "300ms"}},
		{"ratio share given", Policy{Budget: "ratio", BudgetRatio: 0.2},
			map[string]any{"name": "yours", "attempts": 3, "base": "50ms", "cap": "20s", "jitter": "full", "budget": "ratio", "ratio": 0.2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.p.Fields()); diff != "" {
				t.Errorf("Fields (-want +got):\n%s", diff)
			}
		})
	}
}
