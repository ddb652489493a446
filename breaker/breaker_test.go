package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/guardtest"
	"github.com/unherd/unherd/internal/swarm"
	"github.com/unherd/unherd/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	t0, errBoom                              = guardtest.T0, guardtest.ErrBoom
	success, transient, permanent, abandoned = guardtest.Success, guardtest.Transient, guardtest.Permanent, guardtest.Abandoned
)

// constSource returns the same draw every time.
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

func mustNew(t testing.TB, s Settings) *Breaker {
	t.Helper()
	if s.Now == nil {
		s.Now = func() time.Time { return t0 }
	}
	return configtest.Must(New(s))(t)
}

// step is one scripted event at an explicit time (offset from t0).
type step struct {
	at time.Duration
	// op: "ok", "fail", "perm" admit and report at once; "admit" admits
	// and holds the ticket; "held-ok", "held-fail", "held-abandon" report
	// the oldest held ticket.
	op      string
	wantErr error // of the admission
	want    State // state after the step
}

func run(t *testing.T, b *Breaker, steps []step) {
	t.Helper()
	var held []uint64
	for i, s := range steps {
		now := t0.Add(s.at)
		var err error
		switch s.op {
		case "ok", "fail", "perm", "admit":
			var tk uint64
			tk, err = b.AdmitAt(now)
			switch {
			case err != nil:
			case s.op == "ok":
				b.DoneAt(now, tk, success)
			case s.op == "fail":
				b.DoneAt(now, tk, transient)
			case s.op == "perm":
				b.DoneAt(now, tk, permanent)
			default:
				held = append(held, tk)
			}
		case "held-ok", "held-fail", "held-abandon":
			o := map[string]admission.Outcome{"held-ok": success, "held-fail": transient, "held-abandon": abandoned}[s.op]
			b.DoneAt(now, held[0], o)
			held = held[1:]
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if !errors.Is(err, s.wantErr) || (err != nil) != (s.wantErr != nil) {
			t.Fatalf("step %d (%s at %v): err = %v, want %v", i, s.op, s.at, err, s.wantErr)
		}
		if got := b.State(); got != s.want {
			t.Fatalf("step %d (%s at %v): state %v, want %v", i, s.op, s.at, got, s.want)
		}
	}
}

func repeat(n int, s step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func concat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestStateMachine(t *testing.T) {
	noJitter := Settings{OpenJitter: -1}
	// trip5 trips a default breaker at t0: four failures leave it closed,
	// the fifth opens it.
	trip5 := concat(repeat(4, step{op: "fail", want: Closed}), []step{{op: "fail", want: Open}})
	rateOnly := Settings{ConsecutiveFailures: -1, MinCalls: 10, OpenJitter: -1}
	tests := []struct {
		name  string
		s     Settings
		steps []step
	}{
		{"five consecutive failures trip it", noJitter, concat(
			repeat(4, step{op: "fail", want: Closed}),
			[]step{{op: "fail", want: Open}, {op: "ok", wantErr: ErrOpen, want: Open}},
		)},
		{"a success resets the consecutive count", noJitter, concat(
			repeat(4, step{op: "fail", want: Closed}),
			[]step{{op: "ok", want: Closed}},
			repeat(4, step{op: "fail", want: Closed}),
		)},
		{"permanent errors are not failures", noJitter, repeat(30, step{op: "perm", want: Closed})},
		{"failure rate trips once MinCalls calls are in the window", rateOnly, concat(
			repeat(5, step{op: "ok", want: Closed}),
			repeat(4, step{op: "fail", want: Closed}), // 9 calls: below MinCalls
			[]step{{op: "fail", want: Open}},          // 10 calls, 5 failed
		)},
		{"failure rate below the threshold does not trip", rateOnly, concat(
			repeat(6, step{op: "ok", want: Closed}),
			repeat(5, step{op: "fail", want: Closed}), // 11 calls, 5 failed
		)},
		{"calls older than the window do not count", rateOnly, concat(
			repeat(9, step{op: "fail", want: Closed}),
			[]step{{at: 11 * time.Second, op: "fail", want: Closed}}, // the 9 expired
		)},
		{"open rejects until the open duration passes, then one probe closes it", noJitter, concat(
			trip5,
			[]step{
				{at: 4999 * time.Millisecond, op: "ok", wantErr: ErrOpen, want: Open},
				{at: 5 * time.Second, op: "admit", want: HalfOpen},
				{at: 5 * time.Second, op: "ok", wantErr: ErrTooManyProbes, want: HalfOpen},
				{at: 5 * time.Second, op: "held-ok", want: Closed},
				{at: 5 * time.Second, op: "ok", want: Closed},
			},
		)},
		{"a failed probe opens it again for a full period", noJitter, concat(
			trip5,
			[]step{
				{at: 6 * time.Second, op: "fail", want: Open},
				{at: 10 * time.Second, op: "ok", wantErr: ErrOpen, want: Open},
				{at: 11 * time.Second, op: "ok", want: Closed},
			},
		)},
		{"an abandoned probe frees its slot and decides nothing", noJitter, concat(
			trip5,
			[]step{
				{at: 5 * time.Second, op: "admit", want: HalfOpen},
				{at: 5 * time.Second, op: "held-abandon", want: HalfOpen},
				{at: 5 * time.Second, op: "ok", want: Closed},
			},
		)},
		{"success threshold and concurrent probes", Settings{OpenJitter: -1, HalfOpenProbes: 2, SuccessThreshold: 3}, concat(
			trip5,
			[]step{
				{at: 5 * time.Second, op: "admit", want: HalfOpen},
				{at: 5 * time.Second, op: "admit", want: HalfOpen},
				{at: 5 * time.Second, op: "admit", wantErr: ErrTooManyProbes, want: HalfOpen},
				{at: 5 * time.Second, op: "held-ok", want: HalfOpen},
				{at: 5 * time.Second, op: "held-ok", want: HalfOpen},
				{at: 5 * time.Second, op: "ok", want: Closed}, // third success
			},
		)},
		{"a result from before a state change is ignored", noJitter, concat(
			[]step{{op: "admit", want: Closed}},
			trip5,
			[]step{{op: "held-ok", want: Open}}, // stale success cannot close it
		)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run(t, mustNew(t, tc.s), tc.steps)
		})
	}
}

func TestStaleFailureAfterReclose(t *testing.T) {
	b := mustNew(t, Settings{OpenJitter: -1})
	old, _ := b.AdmitAt(t0) // closed, generation 1
	for range 5 {
		tk, _ := b.AdmitAt(t0)
		b.DoneAt(t0, tk, transient)
	}
	probe, err := b.AdmitAt(t0.Add(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b.DoneAt(t0.Add(5*time.Second), probe, success)
	if b.State() != Closed || b.Generation() != 4 {
		t.Fatalf("state %v generation %d, want closed 4", b.State(), b.Generation())
	}
	for range 10 {
		b.DoneAt(t0.Add(5*time.Second), old, transient) // generation 1: ignored
	}
	if b.State() != Closed || b.consec.Load() != 0 {
		t.Fatalf("stale failures counted: state %v, consecutive %d", b.State(), b.consec.Load())
	}
}

func TestOpenJitter(t *testing.T) {
	tests := []struct {
		name     string
		jitter   float64
		draw     uint64
		wantOpen time.Duration
	}{
		{"no jitter", -1, 1 << 63, 5 * time.Second},
		{"zero draw adds nothing", 0.2, 0, 5 * time.Second},
		{"half draw adds half the jitter", 0.2, 1 << 63, 5500 * time.Millisecond},
		{"full jitter doubles at most", 1, 1 << 63, 7500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, Settings{OpenJitter: tc.jitter, Rand: constSource(tc.draw), ConsecutiveFailures: 1})
			tk, _ := b.AdmitAt(t0)
			b.DoneAt(t0, tk, transient)
			if _, err := b.AdmitAt(t0.Add(tc.wantOpen - 1)); !errors.Is(err, ErrOpen) {
				t.Fatalf("1 ns before %v: err = %v, want ErrOpen", tc.wantOpen, err)
			}
			if _, err := b.AdmitAt(t0.Add(tc.wantOpen)); err != nil {
				t.Fatalf("at %v: err = %v, want a probe", tc.wantOpen, err)
			}
		})
	}
}

func TestIsFailureHook(t *testing.T) {
	// Only timeouts count.
	b := mustNew(t, Settings{ConsecutiveFailures: 2, IsFailure: func(o admission.Outcome) bool {
		return o.Err != nil && o.Class == failure.Timeout
	}})
	for range 5 {
		tk, _ := b.AdmitAt(t0)
		b.DoneAt(t0, tk, transient)
	}
	if b.State() != Closed {
		t.Fatalf("transient errors tripped a breaker that counts only timeouts")
	}
	for range 2 {
		tk, _ := b.AdmitAt(t0)
		b.DoneAt(t0, tk, admission.Outcome{Err: errBoom, Class: failure.Timeout})
	}
	if b.State() != Open {
		t.Fatalf("state %v after 2 timeouts, want open", b.State())
	}
}

func TestOnStateChangeOutsideLock(t *testing.T) {
	var got []string
	var b *Breaker
	b = mustNew(t, Settings{ConsecutiveFailures: 1, OpenJitter: -1, OnStateChange: func(from, to State) {
		if !b.mu.TryLock() {
			t.Errorf("%v -> %v: hook called with the lock held", from, to)
			return
		}
		b.mu.Unlock()
		got = append(got, from.String()+" -> "+to.String())
	}})
	tk, _ := b.AdmitAt(t0)
	b.DoneAt(t0, tk, transient)
	tk, _ = b.AdmitAt(t0.Add(5 * time.Second))
	b.DoneAt(t0.Add(5*time.Second), tk, transient)
	tk, _ = b.AdmitAt(t0.Add(10 * time.Second))
	b.DoneAt(t0.Add(10*time.Second), tk, success)
	want := []string{"closed -> open", "open -> half-open", "half-open -> open", "open -> half-open", "half-open -> closed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

func TestAllow(t *testing.T) {
	b := mustNew(t, Settings{ConsecutiveFailures: 2, OpenJitter: -1})
	done, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	done(retry.MarkPermanent(errBoom)) // permanent: not a failure
	done, _ = b.Allow()
	done(fmt.Errorf("call: %w", context.Canceled)) // abandoned
	if b.consec.Load() != 0 {
		t.Fatalf("permanent or cancelled errors counted as failures")
	}
	for range 2 {
		done, _ = b.Allow()
		done(errBoom)
	}
	if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Fatalf("Allow after 2 failures: err = %v, want ErrOpen", err)
	}
}

func TestAllowDoesNotAllocateWhenClosed(t *testing.T) {
	b := mustNew(t, Settings{})
	done, _ := b.Allow() // the first call caches the closure
	done(nil)
	allocs := testing.AllocsPerRun(100, func() {
		done, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		done(nil)
	})
	if allocs != 0 {
		t.Fatalf("Allow+done allocates %v times per call, want 0", allocs)
	}
}

func TestClockUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := New(Settings{ConsecutiveFailures: 3, OpenDuration: time.Minute, OpenJitter: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for range 3 {
			tk, _ := b.Admit(ctx)
			b.Done(context.Background(), tk, transient)
		}
		time.Sleep(59 * time.Second)
		if _, err := b.Admit(ctx); !errors.Is(err, ErrOpen) {
			t.Fatalf("after 59 s: err = %v, want ErrOpen", err)
		}
		time.Sleep(time.Second)
		tk, err := b.Admit(ctx)
		if err != nil {
			t.Fatalf("after 60 s: err = %v, want a probe", err)
		}
		b.Done(context.Background(), tk, success)
		if b.State() != Closed {
			t.Fatalf("state %v after a successful probe, want closed", b.State())
		}
	})
}

func TestValidate(t *testing.T) {
	row := configtest.Row[Settings]
	configtest.Check(t, ErrInvalidSettings, configtest.New(New), []configtest.Case[Settings]{
		row("zero value", Settings{}, true),
		row("rate only", Settings{ConsecutiveFailures: -1}, true),
		row("never trips", Settings{ConsecutiveFailures: -1, FailureRate: -1}, false),
		row("rate above one", Settings{FailureRate: 1.5}, false),
		row("negative min calls", Settings{MinCalls: -1}, false),
		row("negative window", Settings{Window: -1}, false),
		row("too many buckets", Settings{WindowBuckets: 5000}, false),
		row("window shorter than its buckets", Settings{Window: 3, WindowBuckets: 10}, false),
		row("negative open duration", Settings{OpenDuration: -time.Second}, false),
		row("jitter above one", Settings{OpenJitter: 2}, false),
		row("negative probes", Settings{HalfOpenProbes: -1}, false),
		row("negative success threshold", Settings{SuccessThreshold: -1}, false),
	})
}

// TestConcurrent hammers one breaker from many goroutines with mixed
// outcomes under a fast clock, checking the invariants the lock guards.
func TestConcurrent(t *testing.T) {
	var clock atomic.Int64
	var mu sync.Mutex
	legal := map[[2]State]bool{{Closed, Open}: true, {Open, HalfOpen}: true, {HalfOpen, Open}: true, {HalfOpen, Closed}: true}
	var illegal atomic.Int64
	b := mustNew(t, Settings{
		ConsecutiveFailures: 3, HalfOpenProbes: 2, SuccessThreshold: 2,
		OpenDuration: time.Millisecond, Rand: rand.NewPCG(1, 2),
		Now: func() time.Time { return t0.Add(time.Duration(clock.Add(1000))) },
		OnStateChange: func(from, to State) {
			if !legal[[2]State{from, to}] {
				illegal.Add(1)
			}
		},
	})
	swarm.Seeded(t, 32, 7, func(r *rand.Rand) {
		for range 2000 {
			tk, err := b.Admit(context.Background())
			if err != nil {
				continue
			}
			outcomes := []admission.Outcome{success, success, transient, permanent, abandoned}
			b.Done(context.Background(), tk, outcomes[r.IntN(len(outcomes))])
			mu.Lock()
			b.mu.Lock()
			if b.probes < 0 || b.probes > 2 || b.successes < 0 || b.consec.Load() < 0 {
				t.Errorf("probes %d successes %d consecutive %d", b.probes, b.successes, b.consec.Load())
			}
			b.mu.Unlock()
			mu.Unlock()
		}
	})
	if n := illegal.Load(); n != 0 {
		t.Fatalf("%d illegal transitions", n)
	}
	if b.Generation() < 3 {
		t.Fatalf("generation %d: the test never exercised the state machine", b.Generation())
	}
}

// TestHooksOutsideLock: IsFailure and Now are called without the lock held,
// in every state.
func TestHooksOutsideLock(t *testing.T) {
	var b *Breaker
	check := func(what string) {
		if b == nil {
			return // New reads the clock before b exists
		}
		if !b.mu.TryLock() {
			t.Errorf("%s called with the lock held", what)
			return
		}
		b.mu.Unlock()
	}
	now := t0
	b = mustNew(t, Settings{
		ConsecutiveFailures: 1, OpenJitter: -1,
		IsFailure: func(o admission.Outcome) bool { check("IsFailure"); return DefaultIsFailure(o) },
		Now:       func() time.Time { check("Now"); return now },
	})
	ctx := context.Background()
	for _, o := range []admission.Outcome{success, transient, success, transient, abandoned, success} {
		tk, err := b.Admit(ctx)
		if err == nil {
			b.Done(context.Background(), tk, o)
		}
		now = now.Add(3 * time.Second)
	}
	if b.Generation() < 4 {
		t.Fatalf("generation %d: the test did not go through the states", b.Generation())
	}
}

// TestFailureRateWithFoldedSuccesses: 100 successes a second for 60 s, on
// the lock-free path, reach the window only when the first failure folds
// them in, spread over the 60 s. The window ending at 60 s holds buckets
// 51..60, that is 9 s of that interval (900 successes), so the breaker
// trips at the 900th failure and not before.
func TestFailureRateWithFoldedSuccesses(t *testing.T) {
	b := mustNew(t, Settings{ConsecutiveFailures: -1})
	for i := range 6000 {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		tk, _ := b.AdmitAt(at)
		b.DoneAt(at, tk, success)
	}
	at := t0.Add(60 * time.Second)
	for i := 1; i <= 900; i++ {
		tk, err := b.AdmitAt(at)
		if err != nil {
			t.Fatalf("failure %d rejected: %v", i, err)
		}
		b.DoneAt(at, tk, transient)
		if want := map[bool]State{true: Open, false: Closed}[i == 900]; b.State() != want {
			t.Fatalf("after %d failures: %v, want %v", i, b.State(), want)
		}
	}
}

// TestAllowInsideRetryIsNotRetried uses the breaker through Allow inside
// the operation, not as a Guard: once it is open, the operation returns
// ErrOpen itself, and the retry loop must stop after that one attempt
// instead of retrying a call the client refused.
func TestAllowInsideRetryIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{ConsecutiveFailures: 1, OpenJitter: -1, Now: time.Now})
		p, err := retry.New(retry.Config{})
		if err != nil {
			t.Fatal(err)
		}
		attempts, calls := 0, 0
		op := func(context.Context) error {
			attempts++
			done, err := b.Allow()
			if err != nil {
				return err
			}
			calls++
			done(errBoom)
			return errBoom
		}

		// The first attempt fails and trips the breaker; the retry after it
		// is rejected locally and ends the call.
		err = p.Do(context.Background(), op)
		if !errors.Is(err, retry.ErrRejected) || !errors.Is(err, ErrOpen) {
			t.Fatalf("tripping call: err = %v, want ErrRejected and ErrOpen", err)
		}
		if attempts != 2 || calls != 1 {
			t.Fatalf("tripping call: %d attempts, %d reached the dependency; want 2 and 1", attempts, calls)
		}

		attempts, calls = 0, 0
		start := time.Now()
		err = p.Do(context.Background(), op)
		if !errors.Is(err, retry.ErrRejected) || !errors.Is(err, ErrOpen) {
			t.Fatalf("open breaker: err = %v, want ErrRejected and ErrOpen", err)
		}
		var re *retry.Error
		if !errors.As(err, &re) || re.Reason != retry.ErrRejected || re.Attempts != 1 {
			t.Fatalf("open breaker: err = %#v, want a *retry.Error with Reason ErrRejected after 1 attempt", err)
		}
		if attempts != 1 || calls != 0 || time.Since(start) != 0 {
			t.Fatalf("open breaker: %d attempts, %d calls, %v waited; want 1, 0, 0s", attempts, calls, time.Since(start))
		}
	})
}

func TestRejectionsMatchErrRejected(t *testing.T) {
	for _, err := range []error{ErrOpen, ErrTooManyProbes} {
		if !errors.Is(err, retry.ErrRejected) {
			t.Errorf("%q does not match retry.ErrRejected", err)
		}
	}
	if ErrOpen.Error() != "breaker: open" || ErrTooManyProbes.Error() != "breaker: half-open, probes in flight" {
		t.Errorf("messages changed: %q, %q", ErrOpen, ErrTooManyProbes)
	}
	if errors.Is(ErrOpen, ErrTooManyProbes) || errors.Is(ErrTooManyProbes, ErrOpen) {
		t.Error("the two rejections match each other")
	}
}

// TestHugeOpenDuration: math.MaxInt64 passes Validate, and the open period
// it asks for must not wrap around to the past (ending at once) when
// added to the current time or scaled by jitter.
func TestHugeOpenDuration(t *testing.T) {
	tests := []struct {
		name   string
		jitter float64
		draw   uint64
	}{
		{"no jitter", -1, 0},
		{"full jitter, zero draw", 1, 0},
		{"full jitter, half draw", 1, 1 << 63},
		{"full jitter, largest draw", 1, math.MaxUint64},
		{"default jitter, largest draw", 0, math.MaxUint64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{ConsecutiveFailures: 1, OpenDuration: math.MaxInt64, OpenJitter: tc.jitter, Rand: constSource(tc.draw)}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			b := mustNew(t, s)
			// Trip it an hour after the breaker was made, so that the
			// open period starts at a positive offset from its epoch.
			at := t0.Add(time.Hour)
			tk, _ := b.AdmitAt(at)
			b.DoneAt(at, tk, transient)
			for _, later := range []time.Duration{0, time.Nanosecond, time.Hour, 24 * time.Hour, 100 * 365 * 24 * time.Hour} {
				if _, err := b.AdmitAt(at.Add(later)); !errors.Is(err, ErrOpen) {
					t.Fatalf("%v after tripping: err = %v, want ErrOpen", later, err)
				}
			}
			if b.State() != Open {
				t.Fatalf("state %v, want open", b.State())
			}
		})
	}
}
