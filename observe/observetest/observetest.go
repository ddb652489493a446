// Package observetest holds what the tests of observe's adapters share:
// a benchmark of retry.Do with and without an observer, so that every
// adapter's per-event cost is measured the same way.
package observetest

import (
	"context"
	"errors"
	"testing"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
)

var errDown = errors.New("down")

// BenchmarkRetry measures retry.Do without an observer and with obs
// (named name in the sub-benchmarks): a first-attempt success (2 events:
// Attempt, Success) and a call that fails twice with zero delays (6
// events: 3 Attempt, 2 Retry, Success). The difference between the two,
// divided by the events, is the cost of one event.
func BenchmarkRetry(b *testing.B, name string, obs observe.Observer) {
	for _, bc := range []struct {
		name     string
		failures int
	}{{"success", 0}, {"retry2", 2}} {
		for _, o := range []struct {
			name string
			obs  observe.Observer
		}{{"none", nil}, {name, obs}} {
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
