package bench

import (
	"sync/atomic"
	"testing"

	fsbudget "github.com/failsafe-go/failsafe-go/budget"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// failsafeBudget is the part of failsafe-go's budget that its retry
// executor calls: each execution is recorded when it starts and released
// when it ends, and each retry acquires a permit and releases it when the
// retry ends. The methods are exported on its unexported budget type.
type failsafeBudget interface {
	RecordExecution()
	ReleaseExecution()
	TryAcquirePermit() bool
	ReleasePermit()
}

// budgetTraffic is every budget case's traffic, one op per call: nine
// calls in ten succeed at once; the tenth fails, asks for a retry and, if
// granted, succeeds on it. call runs one call (retry tells whether it is a
// tenth) and reports whether a retry was granted.
func budgetTraffic(b *testing.B, call func(retry bool) (granted bool)) {
	b.ReportAllocs()
	var asked, granted atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		var a, g int64
		for i := 1; pb.Next(); i++ {
			retry := i%10 == 0
			if call(retry) {
				g++
			}
			if retry {
				a++
			}
		}
		asked.Add(a)
		granted.Add(g)
	})
	// Each budget allows retries for at least a tenth of the calls (unherd's
	// Ratio 10% plus a floor of 10 a second; failsafe-go's budget 20% of
	// the executions in flight, and at least 3 at once), so nearly all
	// should be granted.
	if a, g := asked.Load(), granted.Load(); g < a*9/10 {
		b.Fatalf("%d of %d retries granted, want nearly all", g, a)
	}
}

// BenchmarkBudgetParallel is a retry budget on every call, from GOMAXPROCS
// goroutines at once: what each library's budget bookkeeping costs, in its
// default configuration. The two budgets are not the same policy: unherd's
// Ratio bounds retries to a share of the requests of the last 10 s;
// failsafe-go's bounds the retries in flight to a share of the executions
// in flight. Each is what its library offers for the job.
func BenchmarkBudgetParallel(b *testing.B) {
	b.Run("unherd", func(b *testing.B) {
		// Held in a budget.Budget, as retry.Policy holds it and as
		// failsafe-go's budget is held in an interface value.
		var r budget.Budget
		r, err := budget.NewRatio(budget.RatioConfig{})
		if err != nil {
			b.Fatal(err)
		}
		budgetTraffic(b, func(retry bool) bool {
			if !retry {
				r.Record(budget.Attempt{N: 1})
				return false
			}
			r.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
			if !r.Withdraw(failure.Transient) {
				return false
			}
			r.Record(budget.Attempt{N: 2, Charged: failure.Transient})
			return true
		})
	})

	b.Run("failsafe-go", func(b *testing.B) {
		fb := fsbudget.New().(failsafeBudget)
		budgetTraffic(b, func(retry bool) bool {
			fb.RecordExecution()
			defer fb.ReleaseExecution()
			if !retry || !fb.TryAcquirePermit() {
				return false
			}
			fb.ReleasePermit()
			return true
		})
	})
}
