package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/fleet"
)

// counting is a transport that counts its round trips.
type counting struct {
	fleet.Transport
	n int
}

func (c *counting) Sync(ctx context.Context, r fleet.Report) (fleet.Grant, error) {
	c.n++
	return c.Transport.Sync(ctx, r)
}

// With the defaults, a process making 1,000 calls a second, one in ten
// failing and retried, syncs about once a second: far fewer than the
// 100 round trips per 10,000 calls the budget may cost.
func TestRoundTrips(t *testing.T) {
	for _, rate := range []int{100, 1000, 10000} {
		synctest.Test(t, func(t *testing.T) {
			tr := &counting{Transport: fleet.NewLedger(nil)}
			b, err := fleet.New(fleet.Config{}, tr)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { b.Run(ctx); close(done) }()
			calls, refused := 0, 0
			tick := time.NewTicker(time.Second / time.Duration(rate))
			for range 60 * rate {
				<-tick.C
				calls++
				b.Record(budget.Attempt{N: 1, Failed: calls%10 == 0})
				if calls%10 == 0 && !b.Withdraw(failure.Transient) {
					refused++
				}
			}
			tick.Stop()
			cancel()
			<-done
			per10k := float64(tr.n) * 1e4 / float64(calls)
			t.Logf("%d calls/s for 60s: %d round trips, %.1f per 10,000 calls; %d of %d retries refused", rate, tr.n, per10k, refused, calls/10)
			if per10k > 100 {
				t.Errorf("%.1f round trips per 10,000 calls, want at most 100", per10k)
			}
		})
	}
}
