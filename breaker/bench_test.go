package breaker

import (
	"context"
	"testing"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/guardtest"
)

// BenchmarkBreakerAllowParallel measures Admit and Done of a success on a
// closed breaker from many goroutines: the path every healthy call takes.
func BenchmarkBreakerAllowParallel(b *testing.B) {
	guardtest.Parallel(b, configtest.Must(New(Settings{}))(b), admission.Outcome{}, false)
}

// BenchmarkBreakerAllowFuncParallel is the same through Allow's done
// function, which is cached per generation.
func BenchmarkBreakerAllowFuncParallel(b *testing.B) {
	b.ReportAllocs()
	br, err := New(Settings{})
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			done, err := br.Allow()
			if err != nil {
				b.Error(err)
				return
			}
			done(nil)
		}
	})
}

// BenchmarkBreakerFailure measures a closed-state failure that does not
// trip the breaker: lock, clock read, window fold.
func BenchmarkBreakerFailure(b *testing.B) {
	b.ReportAllocs()
	br, err := New(Settings{ConsecutiveFailures: -1, FailureRate: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	fail := admission.Outcome{Err: context.DeadlineExceeded, Class: failure.Timeout}
	for i := 0; b.Loop(); i++ {
		t, err := br.Admit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			br.Done(context.Background(), t, fail)
		} else {
			br.Done(context.Background(), t, admission.Outcome{})
		}
	}
}

// BenchmarkTimeNowParallel is the cost of the clock read that the closed
// path avoids: on a machine without a vDSO clock it is larger than the
// whole of Admit and Done.
func BenchmarkTimeNowParallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var t time.Time
		for pb.Next() {
			t = time.Now()
		}
		_ = t
	})
}
