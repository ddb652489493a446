package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/draws"
	"github.com/unherd/unherd/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBoom = errors.New("boom")

func seeded(seed uint64) rand.Source { return draws.NewSeeded(seed, seed) }

func mustNew(t *testing.T, cfg Config) *Policy { return configtest.Must(New(cfg))(t) }

// failing returns an operation that fails n times with err, then succeeds,
// counting its calls.
func failing(n int, err error, calls *int) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= n {
			return err
		}
		return nil
	}
}

func TestDoOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		failures  int
		err       error
		wantCalls int
		wantErr   error // nil for success
	}{
		{"first attempt succeeds", Config{}, 0, errBoom, 1, nil},
		{"two failures then success", Config{}, 2, errBoom, 3, nil},
		{"attempts exhausted", Config{}, 5, errBoom, 3, ErrAttemptsExhausted},
		{"one attempt disables retries", Config{MaxAttempts: 1}, 5, errBoom, 1, ErrAttemptsExhausted},
		{"permanent stops at once", Config{}, 5, MarkPermanent(errBoom), 1, ErrPermanent},
		{"negative server delay is permanent", Config{}, 5, Judge(errBoom, Verdict{Class: failure.Throttled, Delay: -1, HasDelay: true}), 1, ErrPermanent},
		{"classifier makes it permanent", Config{Classify: func(error) failure.Class { return failure.Permanent }}, 5, errBoom, 1, ErrPermanent},
		{"five attempts", Config{MaxAttempts: 5}, 10, errBoom, 5, ErrAttemptsExhausted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.cfg.Rand = seeded(1)
				p := mustNew(t, tc.cfg)
				calls := 0
				err := p.Do(t.Context(), failing(tc.failures, tc.err, &calls))
				if calls != tc.wantCalls {
					t.Errorf("calls = %d, want %d", calls, tc.wantCalls)
				}
				if tc.wantErr == nil {
					if err != nil {
						t.Fatalf("err = %v, want nil", err)
					}
					return
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want Is %v", err, tc.wantErr)
				}
				if !errors.Is(err, errBoom) {
					t.Fatalf("err = %v does not reach the operation's error", err)
				}
				var re *Error
				if !errors.As(err, &re) || re.Attempts != tc.wantCalls {
					t.Fatalf("err = %#v, want *Error with %d attempts", err, tc.wantCalls)
				}
			})
		})
	}
}

// TestDelaysFollowSchedule checks under virtual time that the waits are
// exactly the schedule's delays for the same seeded draws.
func TestDelaysFollowSchedule(t *testing.T) {
	for _, j := range []backoff.Jitter{backoff.Full, backoff.Equal, backoff.Decorrelated, backoff.None} {
		t.Run(j.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sched := backoff.Schedule{Base: 100 * time.Millisecond, Cap: 5 * time.Second, Jitter: j}
				var got []time.Duration
				p := mustNew(t, Config{MaxAttempts: 6, Backoff: sched, Rand: rand.NewPCG(7, 7),
					Observer: observe.On(observe.Retry, func(e observe.Event) { got = append(got, e.Delay) })})
				// Expected: the same draws fed to the schedule directly.
				r := rand.NewPCG(7, 7)
				var want []time.Duration
				var prev, total time.Duration
				for n := range 5 {
					prev = sched.Delay(n, prev, r.Uint64())
					want = append(want, prev)
					total += prev
				}
				start := time.Now()
				var gaps []time.Duration
				last := start
				err := p.Do(t.Context(), func(context.Context) error {
					gaps = append(gaps, time.Since(last))
					last = time.Now()
					return errBoom
				})
				if !errors.Is(err, ErrAttemptsExhausted) {
					t.Fatalf("err = %v", err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("delays (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(want, gaps[1:]); diff != "" {
					t.Fatalf("virtual gaps between attempts (-want +got):\n%s", diff)
				}
				if el := time.Since(start); el != total {
					t.Fatalf("elapsed %v, want %v", el, total)
				}
			})
		})
	}
}

// TestNeverPastDeadline runs many seeded calls with deadlines and checks
// that no call returns after its deadline while the operation itself is
// instantaneous, and that the stop reason is the deadline rule.
func TestNeverPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every call fails; a budget would soon stop the retries this test
		// is about, so it opts out.
		p := mustNew(t, Config{MaxAttempts: 50, Rand: seeded(3), Budget: budget.Unlimited, Backoff: backoff.Schedule{Base: 10 * time.Millisecond, Cap: 2 * time.Second}})
		r := rand.New(rand.NewPCG(9, 9))
		for i := range 200 {
			budget := time.Duration(r.Int64N(int64(5 * time.Second)))
			ctx, cancel := context.WithTimeout(t.Context(), budget)
			start := time.Now()
			err := p.Do(ctx, func(context.Context) error { return errBoom })
			el := time.Since(start)
			cancel()
			if el > budget {
				t.Fatalf("call %d ran %v past a %v deadline", i, el, budget)
			}
			if !errors.Is(err, ErrDeadline) && !errors.Is(err, ErrAttemptsExhausted) {
				t.Fatalf("call %d: err = %v", i, err)
			}
		}
	})
}

func TestDeadlineStopsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{Backoff: backoff.Schedule{Base: time.Second, Jitter: backoff.None}})
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		calls := 0
		err := p.Do(ctx, failing(9, errBoom, &calls))
		if !errors.Is(err, ErrDeadline) || !errors.Is(err, errBoom) {
			t.Fatalf("err = %v, want ErrDeadline wrapping errBoom", err)
		}
		if calls != 1 || time.Since(start) != 0 {
			t.Fatalf("calls = %d, elapsed %v; want 1 call and no wait", calls, time.Since(start))
		}
	})
}

func TestCallerCancellation(t *testing.T) {
	t.Run("during wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := mustNew(t, Config{Backoff: backoff.Schedule{Base: time.Second, Jitter: backoff.None}})
			ctx, cancel := context.WithCancelCause(t.Context())
			cause := errors.New("user went away")
			time.AfterFunc(300*time.Millisecond, func() { cancel(cause) })
			start := time.Now()
			err := p.Do(ctx, func(context.Context) error { return errBoom })
			if !errors.Is(err, ErrCancelled) || !errors.Is(err, cause) || !errors.Is(err, errBoom) {
				t.Fatalf("err = %v", err)
			}
			if el := time.Since(start); el != 300*time.Millisecond {
				t.Fatalf("returned after %v, want 300ms", el)
			}
		})
	})
	t.Run("caller deadline during attempt is not retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := mustNew(t, Config{AttemptTimeout: time.Hour})
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			calls := 0
			err := p.Do(ctx, func(ctx context.Context) error {
				calls++
				<-ctx.Done()
				return ctx.Err()
			})
			if calls != 1 || !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("calls = %d, err = %v", calls, err)
			}
		})
	})
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var classes []failure.Class
		p := mustNew(t, Config{AttemptTimeout: time.Second, Backoff: backoff.Schedule{Immediate: true},
			Observer: observe.On(observe.Retry, func(e observe.Event) { classes = append(classes, e.Class) })})
		start := time.Now()
		calls := 0
		err := p.Do(t.Context(), func(ctx context.Context) error {
			calls++
			<-ctx.Done()
			return ctx.Err()
		})
		if calls != 3 || !errors.Is(err, ErrAttemptsExhausted) || !errors.Is(err, ErrAttemptTimeout) {
			t.Fatalf("calls = %d, err = %v", calls, err)
		}
		if el := time.Since(start); el != 3*time.Second {
			t.Fatalf("elapsed %v, want 3 attempt timeouts", el)
		}
		if diff := cmp.Diff([]failure.Class{failure.Timeout, failure.Timeout}, classes); diff != "" {
			t.Fatal(diff)
		}
	})
}

func TestOuterRetryMakesOneAttempt(t *testing.T) {
	tests := []struct {
		name      string
		ctx       func(context.Context) context.Context
		cfg       Config
		wantCalls int
	}{
		{"unmarked retries", func(c context.Context) context.Context { return c }, Config{}, 3},
		{"marked makes one attempt", WithOuterRetry, Config{}, 1},
		{"marked with NestedAttempts", WithOuterRetry, Config{NestedAttempts: 2}, 2},
		{"mark removed", func(c context.Context) context.Context { return WithoutOuterRetry(WithOuterRetry(c)) }, Config{}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := mustNew(t, tc.cfg)
				calls := 0
				err := p.Do(tc.ctx(t.Context()), failing(9, errBoom, &calls))
				if calls != tc.wantCalls || !errors.Is(err, ErrAttemptsExhausted) {
					t.Fatalf("calls = %d, err = %v", calls, err)
				}
			})
		})
	}
}

func (b *fakeBudget) Withdraw(c failure.Class) bool {
	b.log = append(b.log, "withdraw "+c.String())
	if b.allow == 0 {
		return false
	}
	b.allow--
	return true
}

func (b *fakeBudget) Record(a budget.Attempt) {
	b.log = append(b.log, fmt.Sprintf("record n=%d failed=%v class=%v charged=%v", a.N, a.Failed, a.Class, a.Charged))
}

func TestDoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		v, err := DoValue(t.Context(), Default(), func(context.Context) (string, error) {
			calls++
			if calls < 2 {
				return "partial", errBoom
			}
			return "ok", nil
		})
		if v != "ok" || err != nil {
			t.Fatalf("got %q, %v", v, err)
		}
		// On failure, the last attempt's value comes back with the error.
		v, err = DoValue(t.Context(), Default(), func(context.Context) (string, error) { return "partial", MarkPermanent(errBoom) })
		if v != "partial" || !errors.Is(err, ErrPermanent) {
			t.Fatalf("got %q, %v; want the last value and ErrPermanent", v, err)
		}
	})
}

type fakeTimeouts struct {
	timeout time.Duration
	seen    []time.Duration
	oks     []bool
}

func (f *fakeTimeouts) AttemptTimeout() time.Duration { return f.timeout }

func (f *fakeTimeouts) Observe(d time.Duration, ok bool) {
	f.seen = append(f.seen, d)
	f.oks = append(f.oks, ok)
}

func TestTimeoutSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &fakeTimeouts{timeout: 200 * time.Millisecond}
		p := mustNew(t, Config{Timeouts: ts, AttemptTimeout: time.Hour, Backoff: backoff.Schedule{Immediate: true}})
		calls := 0
		err := p.Do(t.Context(), func(ctx context.Context) error {
			calls++
			if calls == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			time.Sleep(50 * time.Millisecond)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]time.Duration{200 * time.Millisecond, 50 * time.Millisecond}, ts.seen); diff != "" {
			t.Fatal(diff)
		}
		if diff := cmp.Diff([]bool{false, true}, ts.oks); diff != "" {
			t.Fatal(diff)
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100 retries: more than the default bucket pays for.
		p := mustNew(t, Config{MaxAttempts: 4, Rand: seeded(5), Budget: budget.Unlimited})
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				calls := 0
				if err := p.Do(t.Context(), failing(2, errBoom, &calls)); err != nil || calls != 3 {
					t.Errorf("calls = %d, err = %v", calls, err)
				}
			})
		}
		wg.Wait()
	})
}

func TestValidate(t *testing.T) {
	row := configtest.Row[Config]
	configtest.Check(t, ErrInvalidConfig, configtest.New(New), []configtest.Case[Config]{
		row("zero", Config{}, true),
		row("negative attempts", Config{MaxAttempts: -1}, false),
		row("negative nested", Config{NestedAttempts: -1}, false),
		row("negative attempt timeout", Config{AttemptTimeout: -time.Second}, false),
		row("negative server delay", Config{MaxServerDelay: -1}, false),
		row("nil guard", Config{Guards: []admission.Guard{nil}}, false),
		row("jitter above one", Config{ServerJitter: 1.5}, false),
		row("bad backoff", Config{Backoff: backoff.Schedule{Base: -1}}, false),
	})
}

func (g *fakeGuard) Admit(context.Context) (uint64, error) {
	if g.allow == 0 {
		return 0, errOpen
	}
	g.allow--
	g.next++
	return g.next, nil
}

func (g *fakeGuard) Done(_ context.Context, t uint64, o admission.Outcome) {
	g.outcomes = append(g.outcomes, fmt.Sprintf("%d err=%v class=%v abandoned=%v", t, o.Err, o.Class, o.Abandoned))
}

// A wait that would end exactly at the deadline is not started.
func TestDeadlineBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config{Backoff: backoff.Schedule{Base: time.Second, Jitter: backoff.None}})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		calls := 0
		err := p.Do(ctx, failing(9, errBoom, &calls))
		if calls != 1 || !errors.Is(err, ErrDeadline) {
			t.Fatalf("calls = %d, err = %v", calls, err)
		}
	})
}

func (waitingGuard) Admit(ctx context.Context) (uint64, error) {
	<-ctx.Done()
	return 0, NewRejection("test: gave up waiting")
}

func (waitingGuard) Done(context.Context, uint64, admission.Outcome) {}
