package sim

import (
	"testing"
	"time"

	"github.com/unherd/unherd/retry"
)

// A closed population of tight loops (10 ms think time) whose budget is empty comes straight back when a
// call fails at once; with retry.WaitThenReturn each failed call first
// waits its retry's delay, so the same clients send fewer attempts into
// the outage. The model follows the policy's Decision.Wait.
func TestCallsWaitThenReturn(t *testing.T) {
	m := &callModel{closed: true, clients: 100, think: 10 * time.Millisecond, hop: 5 * time.Millisecond,
		hopSD: time.Millisecond, downFrom: 0, downTo: 10 * time.Second, end: 10 * time.Second,
		bucket: 100 * time.Millisecond}
	run := func(onEmpty retry.BudgetExhaustion) *callStats {
		t.Helper()
		s := policySpec{name: "token", attempts: 3, budget: budgetToken, onEmpty: onEmpty}
		st, err := runCalls(nil, 1, 0, m, &s)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	atOnce, waiting := run(retry.ReturnAtOnce), run(retry.WaitThenReturn)
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
