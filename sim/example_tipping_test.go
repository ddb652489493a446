//go:build !race

// The example runs the published model: a second on two cores, and ten
// times that under the race detector, which is why it is left out of
// race-enabled runs; TestTippingPointsWorkers runs the map under it.

package sim_test

import (
	"context"
	"fmt"

	"github.com/unherd/unherd/sim"
)

// The tipping point of the metastable scenario's server and load, for a
// cut of 80% of its CPU lasting 5, 10 or 20 s. Callers resending at once
// keep the server down from the 10 s trigger on, as Huang et al. found;
// unherd's default recovers from every one, with or without the
// server's limiter.
func ExampleTippingPoints() {
	s, ok := sim.Lookup("metastable")
	if !ok {
		fmt.Println("no metastable scenario")
		return
	}
	p := s.Params()
	for _, f := range p.Fields() {
		switch f.Name {
		case "map-cuts":
			*f.Value.(*[]int) = []int{80}
		case "map-lengths":
			*f.Value.(*[]int) = []int{5, 10, 20}
		}
	}
	m, err := sim.TippingPoints(context.Background(), p, sim.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, pol := range m.Policies {
		fmt.Printf("%-17s boundary %v, margin %v\n", pol.Name, pol.Boundary, pol.Margin)
	}
	// Output:
	// resend            boundary [10s], margin 80% for 10s
	// unherd default    boundary [0s], margin <nil>
	// default + limiter boundary [0s], margin <nil>
}
