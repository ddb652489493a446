package throttle

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/guardtest"
	"github.com/unherd/unherd/internal/swarm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	t0, errBoom                            = guardtest.T0, guardtest.ErrBoom
	success, throttled, transient, timeout = guardtest.Success, guardtest.Throttled, guardtest.Transient, guardtest.Timeout
	permanent, abandoned                   = guardtest.Permanent, guardtest.Abandoned
)

func newAdaptive(t testing.TB, s AdaptiveSettings) *Adaptive {
	t.Helper()
	if s.Now == nil {
		s.Now = func() time.Time { return t0 }
	}
	if s.Rand == nil {
		s.Rand = rand.NewPCG(1, 2)
	}
	return configtest.Must(NewAdaptive(s))(t)
}

// counts returns the window's requests and accepts at now, folded.
func (a *Adaptive) counts(now time.Time) (requests, accepts int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.win.Fold(a.ns(now))
	return a.win.Sums(a.ns(now))
}

func TestThreshold(t *testing.T) {
	tests := []struct {
		name              string
		requests, accepts int64
		k                 float64
		want              float64
	}{
		{"no traffic", 0, 0, 2, 0},
		{"all accepted", 10, 10, 2, 0},
		{"exactly half accepted with K=2", 10, 5, 2, 0},
		{"four in ten accepted", 10, 4, 2, 2.0 / 11},
		{"none accepted", 10, 0, 2, 10.0 / 11},
		{"one failure on a fresh client", 1, 0, 2, 0.5},
		{"K=1.1 sheds sooner", 100, 80, 1.1, 12.0 / 101},
		{"more accepts than requests", 5, 9, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := float64(threshold(tc.requests, tc.accepts, tc.k)) / (1 << 53)
			if d := got - tc.want; d > 1e-12 || d < -1e-12 {
				t.Errorf("threshold(%d, %d, %v) = %v, want %v", tc.requests, tc.accepts, tc.k, got, tc.want)
			}
		})
	}
}

func TestDefaultAccepted(t *testing.T) {
	tests := []struct {
		name string
		o    admission.Outcome
		want bool
	}{
		{"success", success, true},
		{"permanent: the backend answered", permanent, true},
		{"throttled", throttled, false},
		{"timeout", timeout, false},
		{"transient", transient, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultAccepted(tc.o); got != tc.want {
				t.Errorf("DefaultAccepted = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAdaptiveSheddingAndRecovery, with the SRE book's counting: 50
// accepted calls, then the dependency throttles everything. The throttle
// admits without rejecting until requests exceed 2*accepts = 100, then
// rejects some calls locally; every call, rejected or not, counts as a
// request, so after 150 more calls the probability is
// (200 - 2*50)/(200 + 1). A window later it is empty and the throttle
// admits everything again.
func TestAdaptiveSheddingAndRecovery(t *testing.T) {
	a := newAdaptive(t, AdaptiveSettings{CountRejections: true})
	for range 50 {
		tk, err := a.AdmitAt(t0)
		if err != nil {
			t.Fatal(err)
		}
		a.DoneAt(t0, tk, success)
	}
	t1 := t0.Add(time.Second)
	var admitted, rejected int
	for i := range 150 {
		tk, err := a.AdmitAt(t1)
		switch {
		case errors.Is(err, ErrThrottled):
			rejected++
			if i < 50 {
				t.Fatalf("call %d rejected while requests <= 2*accepts", 50+i+1)
			}
			continue
		case err != nil:
			t.Fatal(err)
		}
		admitted++
		a.DoneAt(t1, tk, throttled)
	}
	if rejected == 0 {
		t.Fatalf("no local rejections after %d throttled answers", admitted)
	}
	if req, acc := a.counts(t1); req != 200 || acc != 50 {
		t.Fatalf("window holds %d requests %d accepts, want 200 50", req, acc)
	}
	if p, want := a.Probability(), 100.0/201; p < want-1e-12 || p > want+1e-12 {
		t.Fatalf("probability %v, want %v", p, want)
	}

	t2 := t1.Add(DefaultWindow + 5*time.Second)
	if _, err := a.AdmitAt(t2); err != nil {
		t.Fatalf("after the window passed: %v", err)
	}
	if p := a.Probability(); p != 0 {
		t.Fatalf("probability %v after the window passed, want 0", p)
	}
}

func TestAdaptiveAbandonedIsNotARequest(t *testing.T) {
	a := newAdaptive(t, AdaptiveSettings{})
	for range 10 {
		tk, _ := a.AdmitAt(t0)
		a.DoneAt(t0, tk, abandoned)
	}
	if req, acc := a.counts(t0); req != 0 || acc != 0 {
		t.Fatalf("window holds %d requests %d accepts after abandoned calls, want 0 0", req, acc)
	}
	if p := a.Probability(); p != 0 {
		t.Fatalf("probability %v, want 0", p)
	}
}

func TestAdaptiveAcceptedHook(t *testing.T) {
	// Count transient errors as accepted: only throttling sheds.
	a := newAdaptive(t, AdaptiveSettings{Accepted: func(o admission.Outcome) bool {
		return o.Err == nil || o.Class != failure.Throttled
	}})
	for range 100 {
		tk, _ := a.AdmitAt(t0)
		a.DoneAt(t0, tk, transient)
	}
	if p := a.Probability(); p != 0 {
		t.Fatalf("probability %v after transient errors counted as accepted, want 0", p)
	}
}

func TestAdaptiveValidate(t *testing.T) {
	row := configtest.Row[AdaptiveSettings]
	configtest.Check(t, ErrInvalidSettings, configtest.New(NewAdaptive), []configtest.Case[AdaptiveSettings]{
		row("zero value", AdaptiveSettings{}, true),
		row("K of 1.5", AdaptiveSettings{K: 1.5}, true),
		row("K below 1", AdaptiveSettings{K: 0.5}, false),
		row("negative window", AdaptiveSettings{Window: -time.Second}, false),
		row("too many buckets", AdaptiveSettings{WindowBuckets: 1001}, false),
		row("window shorter than its buckets", AdaptiveSettings{Window: 5, WindowBuckets: 10}, false),
	})
}

// TestAdaptiveConcurrent: many goroutines, random outcomes, one instant.
// Every call is counted exactly once: requests = local rejections (with
// CountRejections) + admitted calls not abandoned, accepts = accepted
// outcomes.
func TestAdaptiveConcurrent(t *testing.T) {
	a := newAdaptive(t, AdaptiveSettings{Rand: &lockedPCG{r: rand.NewPCG(3, 4)}, CountRejections: true})
	var requests, accepts atomic.Int64
	swarm.Seeded(t, 32, 5, func(r *rand.Rand) {
		outcomes := []admission.Outcome{success, success, throttled, timeout, transient, permanent, abandoned}
		for range 1000 {
			tk, err := a.Admit(context.Background())
			if err != nil {
				requests.Add(1)
				continue
			}
			o := outcomes[r.IntN(len(outcomes))]
			if !o.Abandoned {
				requests.Add(1)
			}
			if !o.Abandoned && DefaultAccepted(o) {
				accepts.Add(1)
			}
			a.Done(context.Background(), tk, o)
		}
	})
	req, acc := a.counts(t0)
	if req != requests.Load() || acc != accepts.Load() {
		t.Fatalf("window holds %d requests %d accepts, want %d %d", req, acc, requests.Load(), accepts.Load())
	}
}

type lockedPCG struct {
	mu sync.Mutex
	r  *rand.PCG
}

func (l *lockedPCG) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Uint64()
}

func TestAdaptiveUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, err := NewAdaptive(AdaptiveSettings{Rand: rand.NewPCG(1, 1)})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for range 100 {
			tk, err := a.Admit(ctx)
			if err == nil {
				a.Done(context.Background(), tk, throttled)
			}
		}
		if a.Probability() < 0.9 {
			t.Fatalf("probability %v after 100 throttled calls, want > 0.9", a.Probability())
		}
		time.Sleep(DefaultWindow)
		if _, err := a.Admit(ctx); err != nil {
			t.Fatalf("after two quiet minutes: %v", err)
		}
		if p := a.Probability(); p != 0 {
			t.Fatalf("probability %v after two quiet minutes, want 0", p)
		}
	})
}
