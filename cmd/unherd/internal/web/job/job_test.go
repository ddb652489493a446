package job

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/cmd/unherd/internal/policy"
	"github.com/unherd/unherd/sim"
)

// TestParsePolicyReadsAsAFile checks that the page's fields give the
// policy that the same keys in a policy file give.
func TestParsePolicyReadsAsAFile(t *testing.T) {
	cases := []struct {
		fields map[string]string
		file   string
	}{
		{map[string]string{}, "{}\n"},
		{map[string]string{"name": "five", "attempts": "5", "jitter": "none", "budget": "none"}, "name: five\nattempts: 5\njitter: none\nbudget: none\n"},
		{map[string]string{"attempts": " 4 ", "base": "100ms", "cap": "2s", "jitter": "decorrelated", "budget.ratio": "0.2"},
			"attempts: 4\nbase: 100ms\ncap: 2s\njitter: decorrelated\nbudget:\n  kind: ratio\n  ratio: 0.2\n"},
		{map[string]string{"cap": "500ms", "budget": "token"}, "cap: 500ms\nbudget: token\n"},
		// A name that YAML would read otherwise is written quoted.
		{map[string]string{"name": "checkout: eu #1"}, "name: \"checkout: eu #1\"\n"},
	}
	for _, c := range cases {
		got, err := ParsePolicy(c.fields)
		if err != nil {
			t.Errorf("ParsePolicy(%v): %v", c.fields, err)
			continue
		}
		want, err := policy.Parse("policy.yaml", []byte(c.file))
		if err != nil {
			t.Fatalf("policy.Parse(%q): %v", c.file, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ParsePolicy(%v) differs from the file %q (-file +page):\n%s", c.fields, c.file, d)
		}
	}
}

// TestDoNamesTheFieldAtFault checks that a bad value comes back as an
// error naming its input, as the page marks it.
func TestDoNamesTheFieldAtFault(t *testing.T) {
	cases := []struct {
		req   Request
		field string
		says  string
	}{
		{Request{Kind: "whatif", Policy: map[string]string{"cap": "2 seconds"}}, "cap", "is not a duration"},
		{Request{Kind: "whatif", Policy: map[string]string{"attempts": "5\ncap: 1s"}}, "attempts", "attempts"},
		{Request{Kind: "whatif", Policy: map[string]string{"retries": "5"}}, "retries", "unknown field"},
		{Request{Kind: "whatif", Seed: "-1"}, "seed", "not a seed"},
		{Request{Kind: "scenario", Name: "storm", Params: map[string]string{"duration": "a minute"}}, "duration", "not a duration"},
		{Request{Kind: "scenario", Name: "storm", Params: map[string]string{"nope": "1"}}, "nope", "no parameter"},
		{Request{Kind: "scenario", Name: "nope"}, "", "unknown scenario"},
		{Request{Kind: "sim"}, "", "unknown kind"},
	}
	for _, c := range cases {
		req, _ := json.Marshal(c.req)
		var resp Response
		if err := json.Unmarshal(Do(context.Background(), req, nil), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Field != c.field || !strings.Contains(resp.Error, c.says) || resp.Result != nil {
			t.Errorf("Do(%s) = field %q, error %q; want field %q and an error saying %q, no result", req, resp.Field, resp.Error, c.field, c.says)
		}
	}
}

// TestDoRunsAScenario checks a scenario's answer: the result the command
// line prints, its charts and its columns in order.
func TestDoRunsAScenario(t *testing.T) {
	req, _ := json.Marshal(Request{Kind: "scenario", Name: "storm", Quick: true, Params: map[string]string{"duration": "5s"}, Seed: "3"})
	var resp Response
	if err := json.Unmarshal(Do(context.Background(), req, nil), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error != "" {
		t.Fatal(resp.Error)
	}
	var r struct {
		Scenario string         `json:"scenario"`
		Params   map[string]any `json:"params"`
		Claims   []any          `json:"claims"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.Scenario != "storm" || r.Params["duration"] != "5s" || len(r.Claims) == 0 {
		t.Errorf("result: scenario %q, params %v, %d claims; want storm with duration 5s and its claims", r.Scenario, r.Params, len(r.Claims))
	}
	if len(resp.Charts) == 0 || len(resp.Columns) != 1 || len(resp.Columns[0]) == 0 {
		t.Errorf("%d charts, columns %v; want the storm's charts and one table's columns", len(resp.Charts), resp.Columns)
	}
}

// TestScenariosListsTheFields checks the form's description of the
// scenarios: every scenario, every parameter with a default.
func TestScenariosListsTheFields(t *testing.T) {
	var list []Scenario
	if err := json.Unmarshal(Scenarios(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != len(sim.Scenarios()) {
		t.Fatalf("%d scenarios listed; want %d", len(list), len(sim.Scenarios()))
	}
	for _, s := range list {
		if len(s.Fields) == 0 {
			t.Errorf("%s lists no parameters", s.Name)
		}
		for _, f := range s.Fields {
			if f.Default == "" || f.Kind == "" {
				t.Errorf("%s.%s has default %q, kind %q; want both", s.Name, f.Name, f.Default, f.Kind)
			}
		}
	}
}

// The page makes a what-if's parts in workers of their own, keeps the
// default's, and merges them: the merged answer is the whole what-if's,
// result, charts and columns.
func TestMergeAnswersAsTheWholeWhatIf(t *testing.T) {
	ctx := context.Background()
	pol := map[string]string{"name": "five", "attempts": "5", "jitter": "none", "budget": "none"}
	do := func(req Request) Response {
		t.Helper()
		req.Policy, req.Seed = pol, "3"
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var resp Response
		if err := json.Unmarshal(Do(ctx, b, nil), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Error != "" {
			t.Fatalf("%s: %s", req.Kind, resp.Error)
		}
		return resp
	}
	whole := do(Request{Kind: "whatif"})
	a := do(Request{Kind: "parts", Runs: []Run{{Population: "closed"}, {Population: "closed", Default: true}}})
	b := do(Request{Kind: "parts", Runs: []Run{{Population: "open", Default: true}, {Population: "open"}}})
	merged := do(Request{Kind: "merge", Parts: append(a.Parts, b.Parts...)})
	var mr, wr any
	if err := json.Unmarshal(merged.Result, &mr); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(whole.Result, &wr); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(mr, wr) {
		t.Errorf("merged result differs from the whole what-if's:\n%s\n%s", merged.Result, whole.Result)
	}
	if !reflect.DeepEqual(merged.Charts, whole.Charts) || !reflect.DeepEqual(merged.Columns, whole.Columns) {
		t.Errorf("merged charts or columns differ from the whole what-if's")
	}
	for _, bad := range []Request{{Kind: "merge", Parts: a.Parts}, {Kind: "parts"}, {Kind: "parts", Runs: []Run{{Population: "both"}}}} {
		req := bad
		req.Policy = pol
		body, _ := json.Marshal(req)
		var r Response
		if err := json.Unmarshal(Do(ctx, body, nil), &r); err != nil || r.Error == "" {
			t.Errorf("%+v: got %+v, %v; want an error", bad, r, err)
		}
	}
}

// FuzzPolicyJSON checks that the page's fields always make a well-formed
// JSON policy in which a value not typed as a number or a boolean is the
// string the form held, and that parsing it never panics.
func FuzzPolicyJSON(f *testing.F) {
	for _, s := range []string{"", "5", "50ms", "full", "-1", ".5", "a b", "1e3", "x\n", "é", "2 seconds", "\"q\"", "05", "true", "{}"} {
		f.Add(s, "0.2")
	}
	f.Fuzz(func(t *testing.T, v, ratio string) {
		if !utf8.ValidString(v) {
			t.Skip("the form's values are text")
		}
		fields := map[string]string{"name": v, "base": v, "budget.ratio": ratio, "timeouts.attempt": v}
		doc, err := PolicyJSON(fields)
		if err != nil {
			t.Fatalf("PolicyJSON(%q): %v", fields, err)
		}
		var got struct {
			Name any `json:"name"`
		}
		if err := json.Unmarshal(doc, &got); err != nil {
			t.Fatalf("PolicyJSON(%q) = %s: not JSON: %v", fields, doc, err)
		}
		if s, ok := got.Name.(string); ok && s != strings.TrimSpace(v) {
			t.Errorf("PolicyJSON(%q) holds the name %q, want %q", fields, s, strings.TrimSpace(v))
		}
		_, _ = ParsePolicy(fields)
	})
}
