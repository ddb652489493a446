package redelivery_test

import (
	"fmt"
	"math"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/redelivery"
)

// The delay ceilings of the default policy, delivery by delivery (the
// highest draw shows them; full jitter waits anywhere below), and the
// dead letter after the 8th.
func ExamplePolicy_Decide() {
	var p redelivery.Policy
	for delivered := 1; delivered <= 8; delivered++ {
		d := p.Decide(delivered, failure.Transient, math.MaxUint64)
		if d.DeadLetter {
			fmt.Println(delivered, "dead letter")
			continue
		}
		fmt.Println(delivered, d.Delay)
	}
	// A message that cannot be handled goes to the dead letters at once.
	fmt.Println(p.Decide(1, failure.Permanent, 0).DeadLetter)
	// Output:
	// 1 5s
	// 2 10s
	// 3 20s
	// 4 40s
	// 5 1m20s
	// 6 2m40s
	// 7 5m0s
	// 8 dead letter
	// true
}

// A short policy for a job that must finish within a minute.
func ExamplePolicy_Delay() {
	p := redelivery.Policy{Base: time.Second, Cap: 10 * time.Second, MaxDeliveries: 4}
	fmt.Println(p.Delay(3, math.MaxUint64), p.Exhausted(3), p.Exhausted(4))
	// Output:
	// 4s false true
}
