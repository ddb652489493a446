package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
)

// A closed population of tight loops (10 ms think time) whose budget is empty comes straight back when a
// call fails at once; with retry.WaitRetryDelay each failed call first
// waits its retry's delay, so the same clients send fewer attempts into
// the outage. The model follows the policy's Decision.Wait.
func TestCallsWaitRetryDelay(t *testing.T) {
	m := &callModel{closed: true, clients: 100, think: 10 * time.Millisecond, hop: 5 * time.Millisecond,
		hopSD: time.Millisecond, downFrom: 0, downTo: 10 * time.Second, end: 10 * time.Second,
		bucket: 100 * time.Millisecond}
	run := func(onEmpty retry.BudgetExhaustion) *callStats {
		t.Helper()
		s := spec("token", retry.Config{MaxAttempts: 3, OnBudgetExhausted: onEmpty}, budgetToken)
		st, err := runCalls(nil, 1, 0, m, &s)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	atOnce, waiting := run(retry.ReturnAtOnce), run(retry.WaitRetryDelay)
	if again := run(retry.ReturnAtOnce); again.attempts != atOnce.attempts {
		t.Fatalf("same seed, different runs: %d and %d attempts", again.attempts, atOnce.attempts)
	}
	if atOnce.budgetOut == 0 || waiting.budgetOut == 0 {
		t.Fatalf("the budget stopped no call (%d, %d): the test does not exercise it", atOnce.budgetOut, waiting.budgetOut)
	}
	if float64(waiting.attempts) > float64(atOnce.attempts)*2/3 {
		t.Errorf("attempts in the outage: %d waiting, %d returning at once; want the wait to cut them by a third at least",
			waiting.attempts, atOnce.attempts)
	}
	t.Logf("attempts during a 10 s outage, 100 looping clients: %d returning at once, %d waiting first", atOnce.attempts, waiting.attempts)
}

// outageModel is a small outage: 2 s of health, 3 s down, 3 s after.
func outageModel(closed bool) *callModel {
	return &callModel{closed: closed, clients: 200, think: 50 * time.Millisecond, rate: 2000,
		hop: 10 * time.Millisecond, hopSD: 2 * time.Millisecond, capacity: 4000,
		downFrom: 2 * time.Second, downTo: 5 * time.Second, end: 8 * time.Second, bucket: 100 * time.Millisecond}
}

// pureSpecs are policies without guard or budget, which the model carries
// through the outage without events (callRun.follow).
func pureSpecs() []policySpec {
	return []policySpec{
		spec("no backoff", retry.Config{MaxAttempts: 4, Backoff: immediate()}, budgetNone),
		spec("full jitter", retry.Config{MaxAttempts: 4, Backoff: exponential(100*time.Millisecond, time.Second, backoff.Full)}, budgetNone),
	}
}

// testRun runs m with s on seed 1, with set applied to the run first, and
// returns its statistics and the number of events it took.
func testRun(t *testing.T, m *callModel, s *policySpec, set func(r *callRun)) (*callStats, uint64) {
	t.Helper()
	e := engine.New(1, 0)
	r, err := newCallRun(e, m, s)
	if err != nil {
		t.Fatal(err)
	}
	set(r)
	r.run(e)
	return &r.stats, e.Events()
}

// An open stream's arrivals taken in together, when no other event falls
// between them, give the very run that one event per arrival gives.
func TestArrivalsTakenTogether(t *testing.T) {
	for _, s := range pureSpecs() {
		t.Run(s.Name, func(t *testing.T) {
			one, oneEvents := testRun(t, outageModel(false), &s, func(r *callRun) { r.arrivals = 1 })
			many, manyEvents := testRun(t, outageModel(false), &s, func(*callRun) {})
			if diff := cmp.Diff(one, many, cmp.AllowUnexported(callStats{})); diff != "" {
				t.Errorf("one event per arrival and arrivals taken together differ (-one +together):\n%s", diff)
			}
			if manyEvents >= oneEvents/2 {
				t.Errorf("%d events with arrivals taken together, %d with one per arrival: want fewer than half", manyEvents, oneEvents)
			}
		})
	}
}

// A call of a pure policy carried through the outage at once (follow)
// matches the same call driven by an event per answer, as every other
// policy is: the draws come in another order, so the two runs agree
// within sampling noise, not to the byte.
func TestPureCallsFollowed(t *testing.T) {
	for _, closed := range []bool{true, false} {
		for _, s := range pureSpecs() {
			t.Run(fmt.Sprintf("closed=%v/%s", closed, s.Name), func(t *testing.T) {
				events, eventsN := testRun(t, outageModel(closed), &s, func(r *callRun) { r.pure = false })
				followed, followedN := testRun(t, outageModel(closed), &s, func(*callRun) {})
				// near: within three deviations of the difference of two
				// counts with Poisson noise.
				near := func(what string, a, b int64) {
					t.Helper()
					if d, tol := math.Abs(float64(a-b)), 3*math.Sqrt(float64(a+b)); d > tol {
						t.Errorf("%s: %d driven by events, %d followed: want within %.0f", what, a, b, tol)
					}
				}
				near("attempts", events.attempts, followed.attempts)
				near("attempts in the outage", events.attemptsInOutage, followed.attemptsInOutage)
				near("first attempts in the outage", events.firstInOutage, followed.firstInOutage)
				near("calls", events.calls, followed.calls)
				near("succeeded", events.succeeded, followed.succeeded)
				if followedN >= eventsN*3/4 {
					t.Errorf("%d events followed, %d driven by events: want a quarter fewer at least", followedN, eventsN)
				}
				t.Logf("attempts %d / %d, in the outage %d / %d, succeeded %d / %d; events %d / %d",
					events.attempts, followed.attempts, events.attemptsInOutage, followed.attemptsInOutage,
					events.succeeded, followed.succeeded, eventsN, followedN)
			})
		}
	}
}

// bucketOf is t/bucket, at the bucket boundaries and between them.
func TestBucketOf(t *testing.T) {
	for _, w := range []time.Duration{100 * time.Millisecond, time.Second, 7 * time.Millisecond} {
		m := &callModel{bucket: w, end: time.Hour}
		r := &callRun{m: m, perBucket: 1 / float64(w)}
		for k := time.Duration(0); k*w <= m.end; k++ {
			for _, at := range []time.Duration{k*w - 1, k * w, k*w + 1, k*w + w/2} {
				if at < 0 {
					continue
				}
				if got, want := r.bucketOf(at), int(at/w); got != want {
					t.Fatalf("bucket %v: bucketOf(%d) = %d, want %d", w, at, got, want)
				}
			}
		}
	}
}
