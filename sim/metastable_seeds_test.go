//go:build !race

// The published size takes a few seconds a seed on two cores, and ten
// times that under the race detector, which is why this test is left out
// of race-enabled runs; TestMetastableGolden runs the model under it.

package sim

import (
	"context"
	"testing"
)

// TestMetastableOutcomes: Huang et al.'s four outcomes come out at the
// published size on each of the report's five seeds, 1 to 5, and unherd's
// default client recovers from the trigger that keeps theirs down.
func TestMetastableOutcomes(t *testing.T) {
	p := defaultMetastableParams()
	r, err := RunSeeds(context.Background(), metastableScenario, p, Options{Seed: 1}, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Claims {
		if !c.Holds {
			t.Errorf("%s: %s (seeds %v)", c.Claim, c.Measured, c.Differs)
		}
	}
	for _, row := range r.Rows {
		t.Logf("%v", row)
	}
	if got := r.Rows[4]["outcome"]; got != outcomeRecovers {
		t.Errorf("unherd default: %v; want %s", got, outcomeRecovers)
	}
}
