// Package guardtest is what the tests of every admission.Guard (breakers,
// throttles, rate limiters) share: the outcomes a guard hears, the
// instant their clocks start at, and a benchmark that drives a guard the
// way the retry loop does.
package guardtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
)

// T0 is the instant the guards' tests start their clocks at.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrBoom is the error of the failed outcomes below.
var ErrBoom = errors.New("boom")

// The outcomes of an attempt, as a guard hears them.
var (
	Success   = admission.Outcome{}
	Transient = admission.Outcome{Err: ErrBoom, Class: failure.Transient}
	Timeout   = admission.Outcome{Err: ErrBoom, Class: failure.Timeout}
	Throttled = admission.Outcome{Err: ErrBoom, Class: failure.Throttled}
	Permanent = admission.Outcome{Err: ErrBoom, Class: failure.Permanent}
	Abandoned = admission.Outcome{Err: context.Canceled, Abandoned: true}
)

// Parallel measures Admit, then Done with outcome o, of g from many
// goroutines. An attempt g rejects fails the benchmark, unless
// mayReject is set (a guard that is shedding), when it is only counted
// in ns/op.
func Parallel(b *testing.B, g admission.Guard, o admission.Outcome, mayReject bool) {
	b.ReportAllocs()
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, err := g.Admit(ctx)
			switch {
			case err == nil:
				g.Done(ctx, t, o)
			case !mayReject:
				b.Error(err)
				return
			}
		}
	})
}
