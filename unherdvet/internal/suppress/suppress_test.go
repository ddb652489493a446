package suppress

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		text   string
		checks []string
		ok     bool
	}{
		"one check":                 {"//unherdvet:ignore nojitter", []string{"nojitter"}, true},
		"with a reason":             {"//unherdvet:ignore unbounded the supervisor restarts us", []string{"unbounded"}, true},
		"several":                   {"//unherdvet:ignore nojitter,unbounded,,sleepctx why", []string{"nojitter", "unbounded", "sleepctx"}, true},
		"tab":                       {"//unherdvet:ignore\tmisuse", []string{"misuse"}, true},
		"no check silences nothing": {"//unherdvet:ignore", nil, true},
		"not a directive":           {"// unherdvet:ignore nojitter", nil, false},
		"a longer word":             {"//unherdvet:ignorex nojitter", nil, false},
		"another comment":           {"// retry three times", nil, false},
		"block comment":             {"/*unherdvet:ignore nojitter*/", nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			checks, ok := Parse(tc.text)
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.checks, checks); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("//unherdvet:ignore nojitter,unbounded reason")
	f.Add("//unherdvet:ignore")
	f.Add("// not one")
	f.Fuzz(func(t *testing.T, text string) {
		checks, ok := Parse(text)
		if !ok && checks != nil {
			t.Fatalf("Parse(%q) = %q, false: checks without a directive", text, checks)
		}
		if ok && !strings.HasPrefix(text, Directive) {
			t.Fatalf("Parse(%q) accepted a comment without the directive", text)
		}
		for _, c := range checks {
			if c == "" || strings.ContainsAny(c, ", \t\n") {
				t.Fatalf("Parse(%q) returned check %q", text, c)
			}
		}
	})
}
