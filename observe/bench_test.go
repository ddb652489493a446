package observe_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
)

// counter counts events: the cheapest observer that does something.
type counter struct{ n atomic.Int64 }

func (c *counter) Observe(_ context.Context, e observe.Event) { c.n.Add(1) }

// BenchmarkRetryObserver measures retry.Do with and without an observer:
// a first-attempt success (2 events: Attempt, Success) and a call that
// fails twice with zero delays (6 events: 3 Attempt, 2 Retry, Success).
// The difference divided by the events is the cost of one event.
func BenchmarkRetryObserver(b *testing.B) {
	for _, bc := range []struct {
		name     string
		failures int
	}{{"success", 0}, {"retry2", 2}} {
		for _, o := range []struct {
			name string
			obs  observe.Observer
		}{{"none", nil}, {"counter", new(counter)}} {
			b.Run(bc.name+"/"+o.name, func(b *testing.B) {
				cfg := retry.Config{Observer: o.obs}
				if bc.failures > 0 {
					cfg.Budget, cfg.Backoff = budget.Unlimited, backoff.Schedule{Immediate: true}
				}
				p, err := retry.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				n := 0
				op := func(context.Context) error {
					if n++; n%(bc.failures+1) != 0 {
						return errDown
					}
					return nil
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := p.Do(ctx, op); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
