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

// TestTippingPointsFullGrid: the map's shortcuts (the largest trigger
// first, then a bisection per cut) give the boundaries that running every
// trigger of the published map gives, on seed 1: no policy recovers from
// a trigger above its boundary or stays down below it.
func TestTippingPointsFullGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every trigger of the published map: not in -short")
	}
	p := defaultMetastableParams()
	m, err := TippingPoints(context.Background(), p, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	pols := tipPolicies(p)
	type cell struct{ pol, cut, length int }
	var cells []cell
	for j := range pols {
		for i := range m.Cuts {
			for k := range m.Lengths {
				cells = append(cells, cell{j, i, k})
			}
		}
	}
	outs, err := sweep(context.Background(), Options{}, len(cells), func(i int) string {
		c := cells[i]
		out, err := tipCell(context.Background(), p, 1, pols[c.pol], Trigger{Cut: m.Cuts[c.cut], Length: m.Lengths[c.length]})
		if err != nil {
			return err.Error()
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cells {
		b := m.Policies[c.pol].Boundary[c.cut]
		wantDown := b > 0 && m.Lengths[c.length] >= b
		if down := outs[i] != outcomeRecovers; down != wantDown {
			t.Errorf("%s, %v for %v: %s; the map's boundary at that cut is %v", pols[c.pol].name, m.Cuts[c.cut], m.Lengths[c.length], outs[i], b)
		}
	}
}
