package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim"
)

// TestFieldsReadBack checks that the policy `unherd whatif --json` prints
// (sim.Policy.Fields) reads back as a policy file giving the same policy,
// for every budget kind and jitter, with and without an attempt timeout
// and in both formats: the printed form is the file's form.
func TestFieldsReadBack(t *testing.T) {
	var policies []sim.Policy
	for _, j := range []backoff.Jitter{backoff.None, backoff.Full, backoff.Equal, backoff.Decorrelated} {
		for _, b := range []struct {
			kind  string
			ratio float64
		}{{"", 0}, {"none", 0}, {"token", 0}, {"ratio", 0}, {"ratio", 0.25}} {
			for _, timeout := range []time.Duration{0, 750 * time.Millisecond} {
				policies = append(policies, sim.Policy{Name: "rt " + j.String(), Budget: b.kind, BudgetRatio: b.ratio,
					Retry: retry.Config{MaxAttempts: 4, AttemptTimeout: timeout,
						Backoff: backoff.Schedule{Base: 20 * time.Millisecond, Cap: 3 * time.Second, Jitter: j}}})
			}
		}
	}
	policies = append(policies, sim.Policy{}) // every default
	for _, p := range policies {
		want := p.Fields()
		doc, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"printed.json", "printed.yaml"} {
			got, err := Parse(name, doc)
			if err != nil {
				t.Errorf("%s: the printed policy does not read back: %v\n%s", name, err, doc)
				continue
			}
			if d := cmp.Diff(want, got.Fields()); d != "" {
				t.Errorf("%s: read back, the policy differs (-printed +read):\n%s", name, d)
			}
			if strings.Contains(string(doc), `"ratio"`) != (got.Budget == "ratio") {
				t.Errorf("%s: budget %q from %s", name, got.Budget, doc)
			}
		}
	}
}

// TestParseForRefusesByUse checks that a use's refusal names the file's
// field and line: the what-if refuses an attempt timeout, which the
// metastable scenario applies.
func TestParseForRefusesByUse(t *testing.T) {
	data := []byte("attempts: 3\ntimeouts:\n  attempt: 500ms\n")
	_, err := ParseFor("p.yaml", data, sim.UseWhatIf)
	if err == nil || !strings.HasPrefix(err.Error(), "p.yaml:3: timeouts.attempt: the what-if cannot apply it") || !strings.Contains(err.Error(), "metastable") {
		t.Errorf("ParseFor(whatif) = %v; want p.yaml:3: timeouts.attempt: ..., naming the metastable scenario", err)
	}
	p, err := ParseFor("p.yaml", data, sim.UseMetastable)
	if err != nil || p.Retry.AttemptTimeout != 500*time.Millisecond {
		t.Errorf("ParseFor(metastable) = %+v, %v; want the 500ms timeout", p, err)
	}
}
