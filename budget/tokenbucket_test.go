package budget

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
)

func TestTokenBucket(t *testing.T) {
	tests := []struct {
		name  string
		cfg   TokenBucketConfig
		steps []step
	}{
		{"retry behaviour 2.0 arithmetic", AWSStandardQuota(), []step{
			rec(firstOK, 500),                    // full: a success adds nothing
			rec(fail(failure.Transient), 500),    // a failure costs nothing by itself
			w(failure.Transient, true, 495),      // its retry costs 5
			rec(retryOK(failure.Transient), 500), // which the retry's success refunds
			w(failure.Timeout, true, 490),        // a retry after a timeout costs 10
			w(failure.Throttled, true, 485),      // after throttling 5
			rec(retryOK(failure.Timeout), 495),   // refund by the charged class
			rec(firstOK, 496),                    // a first-attempt success adds 1
			rec(retryOK(failure.Throttled), 500), // capped at capacity (501 -> 500)
			w(failure.Permanent, false, 500),     // never retried, nothing taken
			rec(Attempt{N: 3, Failed: true, Class: failure.Timeout, Charged: failure.Transient}, 500),
		}},
		{"empty bucket stops retries", TokenBucketConfig{Capacity: 12, TransientCost: 5, TimeoutCost: 10}, []step{
			w(failure.Timeout, true, 2),
			w(failure.Transient, false, 2), // 2 < 5: refused, nothing taken
			w(failure.Timeout, false, 2),
			rec(firstOK, 3),
			rec(firstOK, 4),
			rec(firstOK, 5),
			w(failure.Transient, true, 0), // exactly enough
			w(failure.Throttled, false, 0),
			rec(retryOK(failure.Transient), 5),
		}},
		{"retry behaviour 2.1 arithmetic, the zero config", TokenBucketConfig{}, []step{
			w(failure.Transient, true, 486),      // a retry costs 14
			w(failure.Timeout, true, 472),        // after a timeout too
			w(failure.Throttled, true, 467),      // after throttling 5
			rec(firstOK, 468),                    // a first-attempt success adds 1
			rec(retryOK(failure.Transient), 482), // a retry's success refunds its cost
			rec(retryOK(failure.Throttled), 487),
		}},
		{"a larger success increment", TokenBucketConfig{SuccessIncrement: 2}, []step{
			w(failure.Transient, true, 486),
			rec(firstOK, 488),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := configtest.Must(NewTokenBucket(tc.cfg))(t)
			runSteps(t, b, func() float64 { return float64(b.Tokens()) }, tc.steps)
		})
	}
}

func runSteps(t *testing.T, b Budget, tokens func() float64, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.withdraw {
			if got := b.Withdraw(s.c); got != s.ok {
				t.Fatalf("step %d: Withdraw(%v) = %v, want %v", i, s.c, got, s.ok)
			}
		} else {
			b.Record(s.a)
		}
		if got := tokens(); got != s.tokens {
			t.Fatalf("step %d: tokens = %v, want %v", i, got, s.tokens)
		}
	}
}

// refTokenBucket is the token bucket written the obvious way, under a
// mutex: the model the atomic implementation is checked against, and its
// rival in BenchmarkTokenBucketMutexParallel.
type refTokenBucket struct {
	mu          sync.Mutex
	tokens, cap int64
	incr        int64
	cost        [failure.Permanent]int64
}

func newRefTokenBucket(cfg TokenBucketConfig) *refTokenBucket {
	b, _ := NewTokenBucket(cfg)
	return &refTokenBucket{tokens: b.capacity, cap: b.capacity, incr: b.incr, cost: b.cost}
}

func (b *refTokenBucket) Withdraw(c failure.Class) bool {
	if c >= failure.Permanent {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < b.cost[c] {
		return false
	}
	b.tokens -= b.cost[c]
	return true
}

func (b *refTokenBucket) Record(a Attempt) {
	if a.Failed {
		return
	}
	n := b.incr
	if a.N > 1 {
		n = b.cost[a.Charged]
	}
	b.mu.Lock()
	if n >= b.cap-b.tokens {
		b.tokens = b.cap
	} else {
		b.tokens += n
	}
	b.mu.Unlock()
}

// randomOp draws a call: mostly successes, some failures and retries.
func randomOp(r *rand.Rand) step {
	c := failure.Class(r.IntN(4))
	switch r.IntN(4) {
	case 0:
		return step{withdraw: true, c: c}
	case 1:
		return step{a: Attempt{N: 1 + r.IntN(3), Failed: true, Class: c}}
	case 2:
		return step{a: Attempt{N: 2 + r.IntN(2), Charged: failure.Class(r.IntN(3))}}
	default:
		return step{a: Attempt{N: 1}}
	}
}

func TestTokenBucketMatchesModel(t *testing.T) {
	cfg := TokenBucketConfig{Capacity: 40, TimeoutCost: 13}
	b, _ := NewTokenBucket(cfg)
	ref := newRefTokenBucket(cfg)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100000 {
		op := randomOp(r)
		if op.withdraw {
			got, want := b.Withdraw(op.c), ref.Withdraw(op.c)
			if got != want {
				t.Fatalf("op %d: Withdraw(%v) = %v, model says %v", i, op.c, got, want)
			}
		} else {
			b.Record(op.a)
			ref.Record(op.a)
		}
		if b.Tokens() != ref.tokens {
			t.Fatalf("op %d (%+v): %d tokens, model has %d", i, op, b.Tokens(), ref.tokens)
		}
	}
}

// FuzzTokenBucket drives a bucket of any valid configuration, including
// ones near the int64 limits, with a sequence of calls, and checks it
// against the model and the bounds after each.
func FuzzTokenBucket(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), int64(0), []byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(1), int64(math.MaxInt64), []byte{0, 4, 8, 12, 3, 3, 3})
	f.Add(int64(10), int64(10), int64(3), int64(2), []byte{0, 0, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, capacity, transient, timeout, incr int64, ops []byte) {
		cfg := TokenBucketConfig{Capacity: capacity, TransientCost: transient, TimeoutCost: timeout, ThrottledCost: transient, SuccessIncrement: incr}
		b, err := NewTokenBucket(cfg)
		if err != nil {
			return
		}
		ref := newRefTokenBucket(cfg)
		for i, op := range ops {
			c := failure.Class(op & 3)
			switch op >> 2 & 3 {
			case 0:
				if got, want := b.Withdraw(c), ref.Withdraw(c); got != want {
					t.Fatalf("op %d: Withdraw(%v) = %v, model says %v", i, c, got, want)
				}
			case 1:
				a := Attempt{N: 1}
				b.Record(a)
				ref.Record(a)
			case 2:
				a := Attempt{N: 2, Charged: min(c, failure.Throttled)}
				b.Record(a)
				ref.Record(a)
			default:
				a := Attempt{N: 1, Failed: true, Class: c}
				b.Record(a)
				ref.Record(a)
			}
			if got := b.Tokens(); got != ref.tokens || got < 0 || got > b.Capacity() {
				t.Fatalf("op %d: %d tokens, model has %d, capacity %d", i, got, ref.tokens, b.Capacity())
			}
		}
	})
}

func TestTokenBucketRefund(t *testing.T) {
	b := configtest.Must(NewTokenBucket(TokenBucketConfig{}))(t)
	var _ Refunder = b
	for _, c := range []failure.Class{failure.Transient, failure.Timeout, failure.Throttled} {
		if !b.Withdraw(c) {
			t.Fatalf("Withdraw(%v) refused with a full bucket", c)
		}
		b.Refund(c)
		if got := b.Tokens(); got != DefaultCapacity {
			t.Fatalf("after Withdraw and Refund of %v: %d tokens, want %d", c, got, DefaultCapacity)
		}
	}
	// A refund never overfills, and a Permanent refund gives nothing.
	b.Refund(failure.Timeout)
	b.Refund(failure.Permanent)
	if got := b.Tokens(); got != DefaultCapacity {
		t.Fatalf("%d tokens, want %d", got, DefaultCapacity)
	}
}
