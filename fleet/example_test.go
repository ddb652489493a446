package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/fleet"
)

// A process shares a budget through an in-memory ledger (in production,
// unherdredis's ledger on Redis) and syncs by hand here, where Run would
// sync in the background; a clock moved by hand stands for time. The
// process sends 1,000 requests a second, so its pace is 10% of them plus
// the fleet's floor of 10 retries a second (it is the whole fleet): 110
// a second, of which its pacer allows a hundredth of the window (100 ms),
// 11, at one instant. Its first lease is one token: one retry goes ahead,
// and the ten refused for want of tokens make the next sync ask for
// twice the eleven. The ledger grants them from the fleet's window (10%
// of 2,000 requests plus the floor over 10 s, less the retry made), and
// retries stay paced: 11 at once, 11 more after another second of
// requests.
func Example() {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	l := fleet.NewLedger(clock)
	b, _ := fleet.New(fleet.Config{Now: clock}, l)
	second := func() {
		for range 1000 {
			b.Record(budget.Attempt{N: 1})
		}
		now = now.Add(time.Second)
	}
	withdraw := func(n int) (allowed int) {
		for range n {
			if b.Withdraw(failure.Transient) {
				allowed++
			}
		}
		return allowed
	}
	ctx := context.Background()
	second()
	_ = b.Sync(ctx)
	fmt.Println(b.State(), b.Stats().Lease)
	fmt.Println(withdraw(300))
	second()
	_ = b.Sync(ctx)
	s := b.Stats()
	fmt.Println(s.Lease, s.FleetRequests, s.FleetRetries)
	fmt.Println(withdraw(300))
	second()
	fmt.Println(withdraw(300))
	// Output:
	// shared 1
	// 1
	// 22 2000 23
	// 11
	// 11
}
