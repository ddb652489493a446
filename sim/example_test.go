package sim_test

import (
	"context"
	"fmt"

	"github.com/unherd/unherd/sim"
)

// A scenario runs with its published parameters or with others set
// through its Params' Fields, each of which points at one parameter. Here Brooker's contention experiment runs for 10 and 20
// clients, 3 runs each: the same seed gives the same table on any machine
// and with any number of workers.
func ExampleScenario() {
	s, ok := sim.Lookup("jitter")
	if !ok {
		fmt.Println("no jitter scenario")
		return
	}
	p := s.Params()
	for _, f := range p.Fields() {
		switch f.Name {
		case "clients":
			*f.Value.(*[]int) = []int{10, 20}
		case "runs":
			*f.Value.(*int) = 3
		}
	}
	r, err := s.Run(context.Background(), p, sim.Options{Seed: 1, Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range r.Rows {
		if row["clients"] == 20 {
			fmt.Printf("%-12s %3d clients: %5.1f calls\n", row["strategy"], row["clients"], row["calls"])
		}
	}
	// Output:
	// none          20 clients: 152.3 calls
	// exponential   20 clients: 149.0 calls
	// full          20 clients: 103.7 calls
	// equal         20 clients: 109.3 calls
	// decorrelated  20 clients: 102.3 calls
}
