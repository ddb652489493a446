package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/tally"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/throttle"
)

var errDown = errors.New("down")

// TestAttemptsEveryEnd walks every way an Attempts loop can end, over a
// guard and a budget that keep count: every ticket a guard hands out
// comes back exactly once, every attempt that ran to a result is
// recorded by the budget and heard by the guard as what it was, a retry
// withdrawn is made or refunded, and the loop's error says what
// happened.
func TestAttemptsEveryEnd(t *testing.T) {
	type counts struct{ attempts, successes, failures, abandoned, recorded, retries int }
	tests := []struct {
		name    string
		reject  bool
		body    func(n int, err *error) (brk bool) // attempt n (1-based): set *err, or not; break or not
		panics  bool
		want    counts
		wantErr func(error) bool
	}{
		{"success at once", false, func(n int, err *error) bool { *err = nil; return false }, false,
			counts{1, 1, 0, 0, 1, 0}, func(e error) bool { return e == nil }},
		{"success on the third", false, func(n int, err *error) bool {
			if n < 3 {
				*err = errDown
			} else {
				*err = nil
			}
			return false
		}, false, counts{3, 1, 2, 0, 3, 2}, func(e error) bool { return e == nil }},
		{"attempts exhausted", false, func(n int, err *error) bool { *err = errDown; return false }, false,
			counts{3, 0, 3, 0, 3, 2}, func(e error) bool {
				return errors.Is(e, retry.ErrAttemptsExhausted) && errors.Is(e, errDown)
			}},
		{"break after a failure", false, func(n int, err *error) bool { *err = errDown; return true }, false,
			counts{1, 0, 1, 0, 1, 0}, func(e error) bool { return e == errDown }},
		{"break after a success", false, func(n int, err *error) bool { *err = nil; return true }, false,
			counts{1, 1, 0, 0, 1, 0}, func(e error) bool { return e == nil }},
		{"break on the second after a failure", false, func(n int, err *error) bool { *err = errDown; return n == 2 }, false,
			counts{2, 0, 2, 0, 2, 1}, func(e error) bool { return e == errDown }},
		{"panic", false, func(n int, err *error) bool { panic("boom") }, true,
			counts{1, 0, 0, 1, 0, 0}, nil},
		{"panic on the second", false, func(n int, err *error) bool {
			if n == 2 {
				panic("boom")
			}
			*err = errDown
			return false
		}, true, counts{2, 0, 1, 1, 1, 1}, nil},
		{"error left unset", false, func(n int, err *error) bool { return false }, false,
			counts{1, 0, 0, 1, 0, 0}, func(e error) bool { return errors.Is(e, retry.ErrNoResult) }},
		{"rejected by the guard", true, func(n int, err *error) bool { t.Fatal("attempt ran"); return false }, false,
			counts{0, 0, 0, 0, 0, 0}, func(e error) bool { return errors.Is(e, retry.ErrRejected) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, b := &tally.Guard{Allow: -1}, &tally.Budget{Allow: -1}
			if tt.reject {
				g.Allow = 0
			}
			p, err := retry.New(retry.Config{MaxAttempts: 3, Backoff: backoff.Schedule{Base: time.Microsecond, Cap: time.Microsecond},
				Budget: b, Guards: []admission.Guard{g}})
			if err != nil {
				t.Fatal(err)
			}
			var callErr error
			n := 0
			panicked := func() (panicked bool) {
				defer func() { panicked = recover() != nil }()
				for range p.Attempts(context.Background(), &callErr) {
					n++
					if tt.body(n, &callErr) {
						break
					}
				}
				return false
			}()
			if panicked != tt.panics {
				t.Fatalf("panicked %v, want %v", panicked, tt.panics)
			}
			if tt.wantErr != nil && !tt.wantErr(callErr) {
				t.Errorf("the loop's error: %v", callErr)
			}
			gc, bc := g.Counts(), b.Counts()
			got := counts{n, gc.Succeeded, gc.Failed, gc.Abandoned, len(bc.Records), bc.Withdrawn}
			if got != tt.want {
				t.Errorf("attempts, successes, failures, abandoned, recorded, withdrawn = %v, want %v", got, tt.want)
			}
			if gc.Admitted != gc.Done() {
				t.Errorf("%d tickets handed out, %d returned", gc.Admitted, gc.Done())
			}
			if made := n - 1; bc.Withdrawn-bc.Refunded != max(made, 0) {
				t.Errorf("%d retries withdrawn, %d refunded, %d made", bc.Withdrawn, bc.Refunded, max(made, 0))
			}
		})
	}
}

// The attempt's context is bounded by the attempt timeout, and an
// attempt that runs out of it is a Timeout, retried.
func TestAttemptsTimeout(t *testing.T) {
	p, err := retry.New(retry.Config{MaxAttempts: 2, AttemptTimeout: 10 * time.Millisecond, Backoff: backoff.Schedule{Base: time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	var callErr error
	n := 0
	start := time.Now()
	for ctx := range p.Attempts(context.Background(), &callErr) {
		n++
		await.Recv(t, ctx.Done(), "the attempt's context to end at its timeout")
		callErr = fmt.Errorf("read: %w", ctx.Err())
	}
	if n != 2 || !errors.Is(callErr, retry.ErrAttemptsExhausted) || !errors.Is(callErr, retry.ErrAttemptTimeout) {
		t.Errorf("%d attempts, error %v; want 2, attempts exhausted after attempt timeouts", n, callErr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v, want the attempt timeouts to end the attempts", d)
	}
}

// The caller's context ending during the wait ends the loop with
// ErrCancelled.
func TestAttemptsCallerGone(t *testing.T) {
	p, err := retry.New(retry.Config{MaxAttempts: 5, Backoff: backoff.Schedule{Base: time.Hour, Cap: time.Hour, Jitter: backoff.None}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var callErr error
	n := 0
	for range p.Attempts(ctx, &callErr) {
		n++
		callErr = errDown
		cancel()
	}
	if n != 1 || !errors.Is(callErr, retry.ErrCancelled) {
		t.Errorf("%d attempts, error %v; want 1 and ErrCancelled", n, callErr)
	}
}

func TestAttemptsNilError(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Attempts(ctx, nil) did not panic")
		}
	}()
	retry.Default().Attempts(context.Background(), nil)
}

// A half-open breaker's probe slot comes back whichever way the loop's
// body leaves its attempt. After a panic or an unset error the probe
// was abandoned, and the next call is admitted as the next probe, where
// a leaked slot would reject it with ErrTooManyProbes; after a break
// that follows a failure, the breaker heard the failed probe and is open
// again.
func TestAttemptsHalfOpenProbe(t *testing.T) {
	ends := []struct {
		name     string
		body     func(err *error) (brk bool)
		reopened bool
	}{
		{"panic", func(*error) bool { panic("boom") }, false},
		{"error left unset", func(*error) bool { return false }, false},
		{"break after a failure", func(err *error) bool { *err = errDown; return true }, true},
	}
	for _, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b, err := breaker.New(breaker.Settings{ConsecutiveFailures: 1, OpenDuration: time.Second, OpenJitter: -1,
				Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			p, err := retry.New(retry.Config{MaxAttempts: 1, Guards: []admission.Guard{b}})
			if err != nil {
				t.Fatal(err)
			}
			var callErr error
			for range p.Attempts(context.Background(), &callErr) {
				callErr = errDown // trips the breaker
			}
			now = now.Add(2 * time.Second) // half-open: one probe
			func() {
				defer func() { _ = recover() }()
				for range p.Attempts(context.Background(), &callErr) {
					if end.body(&callErr) {
						break
					}
				}
			}()
			ran := false
			for range p.Attempts(context.Background(), &callErr) {
				ran = true
				callErr = nil
			}
			switch {
			case end.reopened && (ran || !errors.Is(callErr, breaker.ErrOpen)):
				t.Errorf("the next call: ran %v, error %v; want it rejected by the reopened breaker", ran, callErr)
			case !end.reopened && (!ran || callErr != nil):
				t.Errorf("the next call: ran %v, error %v; want the probe slot back and the call admitted", ran, callErr)
			}
		})
	}
}

// guardedCall is a breaker, a budget and a throttle, fresh for one run of a
// call: the three things a loop that ends badly could leave wrong.
type guardedCall struct {
	at time.Time // the breaker's clock
	b  *breaker.Breaker
	tb *budget.TokenBucket
	th *throttle.Adaptive
	p  *retry.Policy
}

func newGuardedCall(t *testing.T) *guardedCall {
	t.Helper()
	g := &guardedCall{at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var err error
	if g.b, err = breaker.New(breaker.Settings{ConsecutiveFailures: 2, OpenDuration: time.Second, OpenJitter: -1,
		Now: func() time.Time { return g.at }}); err != nil {
		t.Fatal(err)
	}
	if g.tb, err = budget.NewTokenBucket(budget.TokenBucketConfig{}); err != nil {
		t.Fatal(err)
	}
	// The throttle's clock and draws are fixed, so that the same attempts
	// meet the same rejections on both sides of the comparison.
	if g.th, err = throttle.NewAdaptive(throttle.AdaptiveSettings{Now: func() time.Time { return g.at },
		Rand: rand.NewPCG(1, 2)}); err != nil {
		t.Fatal(err)
	}
	if g.p, err = retry.New(retry.Config{MaxAttempts: 3, Backoff: backoff.Schedule{Immediate: true}, Budget: g.tb,
		Guards: []admission.Guard{g.b, g.th}}); err != nil {
		t.Fatal(err)
	}
	return g
}

// state is what the guards and the budget hold after a call: the
// breaker's state, whether it admits the next attempt (a leaked
// half-open probe slot would refuse it), the budget's tokens, and the
// throttle's rejection probability, which its counts of requests and
// accepts decide.
//
// It then tells the breaker of one more failure, which opens a closed
// breaker only if the call's last failure was counted, and reads its
// state again.
func (g *guardedCall) state() string {
	admits, then := "admits", "refused"
	if tk, err := g.b.Admit(context.Background()); err != nil {
		admits = "refuses"
	} else {
		g.b.Done(context.Background(), tk, admission.Outcome{Abandoned: true})
	}
	before := fmt.Sprintf("breaker %v, %s; %d tokens; throttle p=%.3f", g.b.State(), admits, g.tb.Tokens(), g.th.Probability())
	if tk, err := g.b.Admit(context.Background()); err == nil {
		g.b.Done(context.Background(), tk, admission.Outcome{Err: errDown, Class: failure.Transient})
		then = g.b.State().String()
	}
	return before + "; after one more failure: " + then
}

// TestAttemptsMisuseLeavesNothing walks every way a hand-written loop can
// end over a real breaker, token bucket and adaptive throttle, and checks
// that each leaves them exactly as Policy.Do leaves them after the same
// attempts: no ticket or half-open probe slot held, no retry withdrawn
// and not made, no success uncredited. Do is the reference: its function
// cannot skip a report. An early break after a failure is Do's failure
// judged Final; an error left unset is Do's attempt that panicked: both
// end the call there, abandoned or final. The paths run twice: from a
// closed breaker, and from a half-open one whose single probe the first
// attempt is. The throttle's draws are seeded alike on both sides.
func TestAttemptsMisuseLeavesNothing(t *testing.T) {
	type end int
	const (
		fail end = iota
		succeed
		breakAfterFailure
		breakAfterSuccess
		returnAfterFailure
		panicking
		unset
	)
	paths := []struct {
		name string
		ends []end // the attempts in order; the last ends the loop
	}{
		{"success at once", []end{succeed}},
		{"success on the third", []end{fail, fail, succeed}},
		{"attempts exhausted", []end{fail, fail, fail}},
		{"break after a failure", []end{breakAfterFailure}},
		{"break on the second after a failure", []end{fail, breakAfterFailure}},
		{"break after a success", []end{breakAfterSuccess}},
		{"return after a failure", []end{fail, returnAfterFailure}},
		{"panic", []end{panicking}},
		{"panic on the second", []end{fail, panicking}},
		{"error left unset", []end{unset}},
		{"error left unset on the third", []end{fail, fail, unset}},
	}
	// attempts drives one call with a hand-written Attempts loop.
	attempts := func(p *retry.Policy, ends []end) {
		var err error
		func() {
			defer func() { _ = recover() }()
			n := 0
			for range p.Attempts(context.Background(), &err) {
				e := ends[min(n, len(ends)-1)]
				n++
				switch e {
				case fail:
					err = errDown
				case succeed:
					err = nil
				case breakAfterFailure:
					err = errDown
					return // leaves the loop as a break does
				case breakAfterSuccess:
					err = nil
					return
				case returnAfterFailure:
					err = errDown
					return
				case panicking:
					panic("boom")
				case unset:
				}
			}
		}()
	}
	// reference drives the same attempts through Do.
	reference := func(p *retry.Policy, ends []end) {
		defer func() { _ = recover() }()
		n := 0
		_ = p.Do(context.Background(), func(context.Context) error {
			e := ends[min(n, len(ends)-1)]
			n++
			switch e {
			case fail:
				return errDown
			case breakAfterFailure, returnAfterFailure:
				return retry.Judge(errDown, retry.Verdict{Final: true})
			case panicking, unset:
				panic("boom")
			}
			return nil
		})
	}
	for _, start := range []string{"closed", "half-open"} {
		for _, path := range paths {
			t.Run(start+"/"+path.name, func(t *testing.T) {
				got, want := newGuardedCall(t), newGuardedCall(t)
				for _, g := range []*guardedCall{got, want} {
					// Two successes: the throttle counts two accepts, so it
					// lets the next two failures through before it sheds.
					reference(g.p, []end{succeed})
					reference(g.p, []end{succeed})
					if start == "half-open" {
						reference(g.p, []end{fail, fail}) // trips the breaker
						if st := g.b.State(); st != breaker.Open {
							t.Fatalf("breaker %v after two failures, want open", st)
						}
						g.at = g.at.Add(2 * time.Second) // past OpenDuration: the next attempt is the probe
					}
				}
				attempts(got.p, path.ends)
				reference(want.p, path.ends)
				if g, w := got.state(), want.state(); g != w {
					t.Errorf("after the loop: %s\nafter Do:       %s", g, w)
				}
			})
		}
	}
}
