// Package guardbench measures a retry.Guard the way the retry loop drives
// it, the same benchmark for every guard (breakers, throttles, rate
// limiters).
package guardbench

import (
	"context"
	"testing"

	"github.com/unherd/unherd/retry"
)

// Parallel measures Admit, then Done with outcome o, of g from many
// goroutines. An attempt g rejects fails the benchmark, unless
// mayReject is set (a guard that is shedding), when it is only counted
// in ns/op.
func Parallel(b *testing.B, g retry.Guard, o retry.Outcome, mayReject bool) {
	b.ReportAllocs()
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, err := g.Admit(ctx)
			switch {
			case err == nil:
				g.Done(t, o)
			case !mayReject:
				b.Error(err)
				return
			}
		}
	})
}
