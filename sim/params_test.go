package sim

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
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
			v, err := ParseInts("clients", tc.in)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("ParseInts(%q) = %v, nil; want an error", tc.in, v)
				}
				if !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "--clients") {
					t.Errorf("ParseInts(%q) = %v; want an error wrapping ErrInvalidParams naming --clients", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseInts(%q) = %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, v); diff != "" {
				t.Errorf("ParseInts(%q) (-want +got):\n%s", tc.in, diff)
			}
			if back, err := ParseInts("clients", FormatInts(v)); err != nil || !slices.Equal(back, v) {
				t.Errorf("ParseInts(FormatInts(%v)) = %v, %v", v, back, err)
			}
		})
	}
}

// FuzzParseInts checks that ParseInts never panics, that a list it
// accepts comes back unchanged through FormatInts, and that what it
// rejects is an error wrapping ErrInvalidParams that names the parameter.
func FuzzParseInts(f *testing.F) {
	for _, s := range []string{"10,20", " 1 , 2 ", "", ",", "a", "1,,2", "-5,+3", "0x10",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "1,2,x", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseInts("clients", s)
		if err != nil {
			if !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "--clients") {
				t.Fatalf("ParseInts(%q) = %v; want an error wrapping ErrInvalidParams naming --clients", s, err)
			}
			return
		}
		if len(v) == 0 || len(v) > strings.Count(s, ",")+1 {
			t.Fatalf("ParseInts(%q) accepted %d integers from %d items", s, len(v), strings.Count(s, ",")+1)
		}
		str := FormatInts(v)
		back, err := ParseInts("clients", str)
		if err != nil {
			t.Fatalf("ParseInts(%q) gave %v, whose form %q is rejected: %v", s, v, str, err)
		}
		if !slices.Equal(back, v) {
			t.Fatalf("ParseInts(%q) gave %v; through %q it became %v", s, v, str, back)
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
		{"ratio budget with its default share",
			Policy{Name: "mine", Retry: retry.Config{MaxAttempts: 4, Backoff: backoff.Schedule{Base: 10 * time.Millisecond, Cap: time.Second, Jitter: backoff.None}},
				Budget: "ratio"},
			map[string]any{"name": "mine", "attempts": 4, "base": "10ms", "cap": "1s", "jitter": "none",
				"budget": map[string]any{"kind": "ratio", "ratio": 0.1}}},
		{"ratio share given", Policy{Budget: "ratio", BudgetRatio: 0.2},
			map[string]any{"name": "yours", "attempts": 3, "base": "50ms", "cap": "20s", "jitter": "full",
				"budget": map[string]any{"kind": "ratio", "ratio": 0.2}}},
		{"attempt timeout", Policy{Retry: retry.Config{AttemptTimeout: 1500 * time.Millisecond}},
			map[string]any{"name": "yours", "attempts": 3, "base": "50ms", "cap": "20s", "jitter": "full", "budget": "token",
				"timeouts": map[string]any{"attempt": "1.5s"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.p.Fields()); diff != "" {
				t.Errorf("Fields (-want +got):\n%s", diff)
			}
		})
	}
}
