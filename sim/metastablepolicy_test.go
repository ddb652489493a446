package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/retry"
)

// A user's policy runs as one more row of the metastable scenario, its
// callers timing out after its own attempt timeout: unherd's default
// with the scenario's 3 s timeout fares as the default's row does (on
// a random stream of its own); the same policy with a timeout of a tenth of that gives up on
// slow answers sooner, and the server wastes more of its work.
func TestMetastableRunsAUsersPolicy(t *testing.T) {
	run := func(pol Policy) Row {
		t.Helper()
		p := tinyMetastable()
		if err := p.SetPolicy(pol); err != nil {
			t.Fatal(err)
		}
		r, err := metastableScenario.Run(context.Background(), p, Options{Seed: 1, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Rows) != 7 || len(r.Claims) != 6 {
			t.Fatalf("%d rows, %d claims; want 7 (the user's last) and 6 (Huang et al.'s four, the map's two)", len(r.Rows), len(r.Claims))
		}
		if m := r.Charts[len(r.Charts)-1]; !strings.Contains(fmt.Sprint(m.Series, m.Lines), msYours) {
			t.Errorf("the tipping-point map %+v does not show the user's policy", m)
		}
		yours, def := r.Rows[6], r.Rows[4]
		if yours["policy"] != msYours || yours["published"] != "-" || yours["trigger"] != def["trigger"] {
			t.Fatalf("user's row %v; want policy %q, no published outcome, the default's trigger %v", yours, msYours, def["trigger"])
		}
		return yours
	}
	same := run(Policy{Name: "mine", Retry: retry.Config{AttemptTimeout: 3 * time.Second}})
	p := tinyMetastable()
	r, err := metastableScenario.Run(context.Background(), p, Options{Seed: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	def := r.Rows[4]
	if same["outcome"] != def["outcome"] {
		t.Errorf("the default as a user's policy: %v, the default's row %v", same["outcome"], def["outcome"])
	}
	for _, c := range []string{"goodput_before", "goodput_during", "goodput_after"} {
		if y, d := same[c].(float64), def[c].(float64); !within(y, d, 0.1) {
			t.Errorf("the default as a user's policy: %s %v, the default's row %v; want within 10%%", c, y, d)
		}
	}
	short := run(Policy{Name: "mine", Retry: retry.Config{AttemptTimeout: 300 * time.Millisecond}})
	if !(short["wasted_pct"].(float64) > same["wasted_pct"].(float64)) {
		t.Logf("3s: %v; 300ms: %v", same, short)
		t.Errorf("a 300ms attempt timeout wastes %v%% of the work, 3s %v%%; want more", short["wasted_pct"], same["wasted_pct"])
	}

	var pe *ParamError
	if err := tinyMetastable().SetPolicy(Policy{Budget: "lots"}); !errors.As(err, &pe) {
		t.Errorf("SetPolicy with a bad budget: %v, want a *ParamError", err)
	}
}
