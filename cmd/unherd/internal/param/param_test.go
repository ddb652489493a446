package param

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/sim"
)

// parseInts sets a list parameter named clients from s.
func parseInts(s string) ([]int, error) {
	var v []int
	err := Set(sim.Field{Name: "clients", Value: &v}, s)
	return v, err
}

// formatInts writes a list parameter's value.
func formatInts(v []int) string { return Text(sim.Field{Name: "clients", Value: &v}) }

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
			v, err := parseInts(tc.in)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("parseInts(%q) = %v, nil; want an error", tc.in, v)
				}
				if !errors.Is(err, sim.ErrInvalidParams) || !strings.Contains(err.Error(), "--clients") {
					t.Errorf("parseInts(%q) = %v; want an error wrapping sim.ErrInvalidParams naming --clients", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseInts(%q) = %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, v); diff != "" {
				t.Errorf("parseInts(%q) (-want +got):\n%s", tc.in, diff)
			}
			if back, err := parseInts(formatInts(v)); err != nil || !slices.Equal(back, v) {
				t.Errorf("parseInts(formatInts(%v)) = %v, %v", v, back, err)
			}
		})
	}
}

// FuzzParseInts checks that a list parameter's Set never panics, that a
// list it accepts comes back unchanged through Text, and that what it
// rejects is an error wrapping sim.ErrInvalidParams that names the parameter.
func FuzzParseInts(f *testing.F) {
	for _, s := range []string{"10,20", " 1 , 2 ", "", ",", "a", "1,,2", "-5,+3", "0x10",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "1,2,x", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseInts(s)
		if err != nil {
			if !errors.Is(err, sim.ErrInvalidParams) || !strings.Contains(err.Error(), "--clients") {
				t.Fatalf("parseInts(%q) = %v; want an error wrapping sim.ErrInvalidParams naming --clients", s, err)
			}
			return
		}
		if len(v) == 0 || len(v) > strings.Count(s, ",")+1 {
			t.Fatalf("parseInts(%q) accepted %d integers from %d items", s, len(v), strings.Count(s, ",")+1)
		}
		str := formatInts(v)
		back, err := parseInts(str)
		if err != nil {
			t.Fatalf("parseInts(%q) gave %v, whose form %q is rejected: %v", s, v, str, err)
		}
		if !slices.Equal(back, v) {
			t.Fatalf("parseInts(%q) gave %v; through %q it became %v", s, v, str, back)
		}
	})
}

// TestSetAndText checks each kind of parameter: Text writes what Set
// reads, and Set's errors say what the text is not.
func TestSetAndText(t *testing.T) {
	var (
		n  int
		x  float64
		d  time.Duration
		ns []int
	)
	for _, tc := range []struct {
		name  string
		field sim.Field
		in    string
		kind  string
		text  string // "" when in is refused
		err   string
	}{
		{"int", sim.Field{Name: "runs", Value: &n}, " 0x10 ", "int", "16", ""},
		{"int refused", sim.Field{Name: "runs", Value: &n}, "two", "int", "", `"two" is not a whole number`},
		{"float", sim.Field{Name: "ratio", Value: &x}, "0.25", "float", "0.25", ""},
		{"float refused", sim.Field{Name: "ratio", Value: &x}, "a quarter", "float", "", `"a quarter" is not a number`},
		{"duration", sim.Field{Name: "hop", Value: &d}, "1500ms", "duration", "1.5s", ""},
		{"duration refused", sim.Field{Name: "hop", Value: &d}, "2 seconds", "duration", "", `"2 seconds" is not a duration`},
		{"list", sim.Field{Name: "clients", Value: &ns}, "10, 20", "ints", "10,20", ""},
	} {
		if got := Kind(tc.field); got != tc.kind {
			t.Errorf("%s: Kind = %q, want %q", tc.name, got, tc.kind)
		}
		err := Flag(tc.field).Set(tc.in)
		if tc.text == "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: Set(%q) = %v, want an error saying %s", tc.name, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: Set(%q) = %v", tc.name, tc.in, err)
		}
		if got := Flag(tc.field).String(); got != tc.text {
			t.Errorf("%s: after Set(%q), String = %q, want %q", tc.name, tc.in, got, tc.text)
		}
	}
	if got := (Flag{}).String(); got != "" {
		t.Errorf("zero Flag's String = %q, want \"\"", got)
	}
}
