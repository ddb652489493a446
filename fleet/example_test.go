package fleet_test

import (
	"context"
	"fmt"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/fleet"
)

// A process shares a budget through an in-memory ledger (in production,
// unherdredis's ledger on Redis) and syncs by hand here, where Run would
// sync in the background. Its first lease is one token; the retries it
// was refused make the next sync ask for more, and the ledger grants what
// the fleet's window allows: 10% of the 1,000 requests plus the floor of
// 10 retries per second over 10 s, less the retry already made.
func Example() {
	l := fleet.NewLedger(nil)
	b, _ := fleet.New(fleet.Config{}, l)
	for range 1000 {
		b.Record(budget.Attempt{N: 1})
	}
	ctx := context.Background()
	_ = b.Sync(ctx)
	fmt.Println(b.State(), b.Stats().Lease)
	allowed := 0
	for range 300 {
		if b.Withdraw(budget.Transient) {
			allowed++
		}
	}
	fmt.Println(allowed)
	_ = b.Sync(ctx)
	s := b.Stats()
	fmt.Println(s.Lease, s.FleetRequests, s.FleetRetries)
	// Output:
	// shared 1
	// 1
	// 199 1000 200
}
