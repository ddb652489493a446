package job

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/cmd/unherd/internal/policy"
	"github.com/unherd/unherd/sim"
)

// yamlFile writes fields as a user writes them in a policy file: each
// value bare, dotted keys nested.
func yamlFile(fields map[string]string) string {
	var b strings.Builder
	for _, k := range []string{"name", "attempts", "base", "cap", "jitter"} {
		if v, ok := fields[k]; ok {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	kind, hasKind := fields["budget"]
	ratio, hasRatio := fields["budget.ratio"]
	switch {
	case hasRatio:
		b.WriteString("budget:\n")
		if hasKind {
			fmt.Fprintf(&b, "  kind: %s\n", kind)
		}
		fmt.Fprintf(&b, "  ratio: %s\n", ratio)
	case hasKind:
		fmt.Fprintf(&b, "budget: %s\n", kind)
	}
	if v, ok := fields["timeouts.attempt"]; ok {
		fmt.Fprintf(&b, "timeouts:\n  attempt: %s\n", v)
	}
	if b.Len() == 0 {
		return "{}\n"
	}
	return b.String()
}

// fileLine is the file and line the command line's errors begin with.
var fileLine = regexp.MustCompile(`^policy\.yaml:\d+: `)

// TestPageAndCommandLineAgree feeds the same inputs to the command line's
// path (a policy file read by policy.ParseFor, as `unherd whatif` and
// `unherd sim metastable --policy` read it) and to the page's (the form's
// fields in a request to Do, and ParsePolicyFor): both accept them, giving
// the same policy, or both refuse them, naming the same field with the
// same message, the page's without the file and line.
func TestPageAndCommandLineAgree(t *testing.T) {
	cases := []struct {
		name   string
		fields map[string]string
		use    string
		field  string // the field both refuse; "" when both accept
	}{
		{"empty", map[string]string{}, sim.UseWhatIf, ""},
		{"every key", map[string]string{"name": "five", "attempts": "5", "base": "100ms", "cap": "2s", "jitter": "none", "budget": "none"}, sim.UseWhatIf, ""},
		{"jitter bogus", map[string]string{"jitter": "bogus"}, sim.UseWhatIf, "jitter"},
		{"jitter in capitals", map[string]string{"jitter": "Equal"}, sim.UseWhatIf, ""},
		{"attempts 0 is the default", map[string]string{"attempts": "0"}, sim.UseWhatIf, ""},
		{"attempts 1", map[string]string{"attempts": "1"}, sim.UseWhatIf, ""},
		{"attempts negative", map[string]string{"attempts": "-1"}, sim.UseWhatIf, "attempts"},
		{"attempts above the limit", map[string]string{"attempts": "101"}, sim.UseWhatIf, "attempts"},
		{"attempts fractional", map[string]string{"attempts": "2.5"}, sim.UseWhatIf, "attempts"},
		{"attempts with a plus", map[string]string{"attempts": "+3"}, sim.UseWhatIf, ""},
		{"attempts with a leading zero", map[string]string{"attempts": "05"}, sim.UseWhatIf, ""},
		{"attempts in exponent form", map[string]string{"attempts": "1e1"}, sim.UseWhatIf, "attempts"},
		{"ratio without its zero", map[string]string{"budget.ratio": ".5"}, sim.UseWhatIf, ""},
		{"ratio in exponent form", map[string]string{"budget.ratio": "2e-1"}, sim.UseWhatIf, ""},
		{"ratio with an underscore", map[string]string{"budget.ratio": "0_1"}, sim.UseWhatIf, "budget.ratio"},
		{"ratio huge", map[string]string{"budget.ratio": "1e700"}, sim.UseWhatIf, "budget.ratio"},
		{"attempts a word", map[string]string{"attempts": "five"}, sim.UseWhatIf, "attempts"},
		{"ratio alone is the ratio budget", map[string]string{"budget.ratio": "0.2"}, sim.UseWhatIf, ""},
		{"ratio with kind ratio", map[string]string{"budget": "ratio", "budget.ratio": "0.2"}, sim.UseWhatIf, ""},
		{"ratio budget, default share", map[string]string{"budget": "ratio"}, sim.UseWhatIf, ""},
		{"ratio with kind token", map[string]string{"budget": "token", "budget.ratio": "0.2"}, sim.UseWhatIf, "budget.ratio"},
		{"ratio above 1", map[string]string{"budget.ratio": "1.5"}, sim.UseWhatIf, "budget.ratio"},
		{"ratio a word", map[string]string{"budget.ratio": "lots"}, sim.UseWhatIf, "budget.ratio"},
		{"budget unknown", map[string]string{"budget": "lots"}, sim.UseWhatIf, "budget"},
		{"cap not a duration", map[string]string{"cap": "2 seconds"}, sim.UseWhatIf, "cap"},
		{"base a number", map[string]string{"base": "50"}, sim.UseWhatIf, "base"},
		{"base above cap", map[string]string{"base": "2s", "cap": "1s"}, sim.UseWhatIf, "base"},
		{"attempt timeout in the what-if", map[string]string{"timeouts.attempt": "500ms"}, sim.UseWhatIf, "timeouts.attempt"},
		{"attempt timeout in metastable", map[string]string{"timeouts.attempt": "500ms"}, sim.UseMetastable, ""},
		{"attempt timeout negative", map[string]string{"timeouts.attempt": "-1s"}, sim.UseMetastable, "timeouts.attempt"},
	}
	// typed are the cases whose file value is a number (YAML's 0_1) that
	// JSON cannot hold: the page's is text, and the messages say so.
	typed := map[string]bool{"ratio with an underscore": true}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := yamlFile(c.fields)
			cli, cliErr := policy.ParseFor("policy.yaml", []byte(file), c.use)
			page, pageErr := ParsePolicyFor(c.fields, c.use)
			if (cliErr == nil) != (c.field == "") || (pageErr == nil) != (c.field == "") {
				t.Fatalf("command line: %v; page: %v; want both to %s", cliErr, pageErr, map[bool]string{true: "accept", false: "refuse " + c.field}[c.field == ""])
			}
			if c.field == "" {
				if d := cmp.Diff(cli, page); d != "" {
					t.Errorf("the policies differ (-command line +page), file:\n%s\n%s", file, d)
				}
				return
			}
			// The page's answer: Do's for the what-if, the same step
			// (policyError) for a scenario's policy.
			resp := policyError(pageErr)
			if c.use == sim.UseWhatIf {
				body, _ := json.Marshal(Request{Kind: "whatif", Policy: c.fields})
				if err := json.Unmarshal(Do(context.Background(), body, nil), &resp); err != nil {
					t.Fatal(err)
				}
			}
			want := fileLine.ReplaceAllString(cliErr.Error(), "")
			if !strings.HasPrefix(want, c.field+": ") {
				t.Errorf("command line: %q does not name %s", cliErr, c.field)
			}
			if resp.Field != c.field || resp.Error != want && !(typed[c.name] && strings.HasPrefix(resp.Error, c.field+": ")) {
				t.Errorf("page: field %q, error %q; want %q, %q", resp.Field, resp.Error, c.field, want)
			}
		})
	}
}

// FuzzPageAndCommandLineAgree checks TestPageAndCommandLineAgree's rule
// on any one value of any field: the page and a policy file written with
// the value bare both accept it, with the same policy, or both refuse it.
func FuzzPageAndCommandLineAgree(f *testing.F) {
	for _, s := range []string{"5", "-1", "0", "+3", "05", ".5", "0.2", "1e700", "50ms", "2 seconds", "full", "bogus", "ratio", "null", "~", "true", "1e1", "0x1F"} {
		f.Add(uint8(0), s)
		f.Add(uint8(1), s)
		f.Add(uint8(6), s)
	}
	f.Fuzz(func(t *testing.T, k uint8, v string) {
		key := PolicyKeys[int(k)%len(PolicyKeys)]
		// A value a user can type on one line, and that YAML writes bare:
		// no quotes, comments, flow or block indicators.
		if v != strings.TrimSpace(v) || v == "" || strings.ContainsAny(v, "\"'#:{}[],&*!|>%@`\n\r\t\\") || strings.HasPrefix(v, "-") && len(v) > 1 && v[1] == ' ' ||
			strings.HasPrefix(v, "- ") || strings.HasPrefix(v, "?") || strings.HasPrefix(v, "-") && !strings.ContainsAny(v[1:], "0123456789") {
			t.Skip()
		}
		for _, r := range v {
			if r < 0x20 || r > 0x7e {
				t.Skip()
			}
		}
		fields := map[string]string{key: v}
		cli, cliErr := policy.ParseFor("policy.yaml", []byte(yamlFile(fields)), sim.UseMetastable)
		page, pageErr := ParsePolicyFor(fields, sim.UseMetastable)
		if (cliErr == nil) != (pageErr == nil) {
			t.Fatalf("%s=%q: command line %v, page %v", key, v, cliErr, pageErr)
		}
		if cliErr == nil {
			if d := cmp.Diff(cli, page); d != "" {
				t.Fatalf("%s=%q: policies differ (-command line +page):\n%s", key, v, d)
			}
		}
	})
}

// TestScenarioTakesThePolicy checks that the page learns which scenario
// runs its policy, and that a policy such a scenario refuses is answered
// by its field before any run.
func TestScenarioTakesThePolicy(t *testing.T) {
	var list []Scenario
	if err := json.Unmarshal(Scenarios(), &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Policy != (s.Name == sim.UseMetastable) {
			t.Errorf("%s: Policy %v", s.Name, s.Policy)
		}
	}
	body, _ := json.Marshal(Request{Kind: "scenario", Name: sim.UseMetastable, Quick: true, Policy: map[string]string{"jitter": "bogus"}})
	var resp Response
	if err := json.Unmarshal(Do(context.Background(), body, nil), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Field != "jitter" || !strings.HasPrefix(resp.Error, `jitter: unknown jitter "bogus"`) || resp.Result != nil {
		t.Errorf("metastable with jitter=bogus: field %q, error %q; want the jitter field's error, no result", resp.Field, resp.Error)
	}
}
