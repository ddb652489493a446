package limit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/retry"
)

// A client whose limiter is Fixed(2) never has more than 2 attempts in
// flight, and the calls refused are not retried.
func TestGuardBoundsAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Algorithm: Fixed(2), MaxWait: -1})
		p, err := retry.New(retry.Config{MaxAttempts: 3, Guards: []admission.Guard{l.Guard()}})
		if err != nil {
			t.Fatal(err)
		}
		var cur, peak, attempts atomic.Int64
		errs := make(chan error, 5)
		for range 5 {
			go func() {
				errs <- p.Do(t.Context(), func(ctx context.Context) error {
					attempts.Add(1)
					n := cur.Add(1)
					for q := peak.Load(); n > q && !peak.CompareAndSwap(q, n); q = peak.Load() {
					}
					time.Sleep(10 * time.Millisecond)
					cur.Add(-1)
					return nil
				})
			}()
		}
		var ok, rejected int
		for range 5 {
			switch err := await.Recv(t, errs, "a call's result"); {
			case err == nil:
				ok++
			case errors.Is(err, retry.ErrRejected) && errors.Is(err, ErrLimited):
				rejected++
			default:
				t.Errorf("call: %v, want nil or a rejection matching ErrLimited", err)
			}
		}
		if ok != 2 || rejected != 3 || attempts.Load() != 2 || peak.Load() != 2 {
			t.Errorf("%d succeeded, %d rejected, %d attempts, peak %d in flight; want 2, 3, 2, 2",
				ok, rejected, attempts.Load(), peak.Load())
		}
		checkEmpty(t, l)
	})
}

// Done tells the algorithm how each attempt ended: a success is a
// sample, a Timeout or Throttled failure a drop, other failures and
// abandoned attempts nothing.
func TestGuardOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{limit: 4}
		l := mustNew(t, Config{Algorithm: rec})
		g := l.Guard()
		for _, o := range []admission.Outcome{
			{},
			{Err: errors.New("slow"), Class: failure.Timeout},
			{Err: errors.New("429"), Class: failure.Throttled},
			{Err: errors.New("reset"), Class: failure.Transient},
			{Err: errors.New("404"), Class: failure.Permanent},
			{Err: context.Canceled, Abandoned: true},
		} {
			ticket, err := g.Admit(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(7 * time.Millisecond)
			g.Done(context.Background(), ticket, o)
		}
		want := []Sample{
			{RTT: 7 * time.Millisecond, InFlight: 1},
			{RTT: 7 * time.Millisecond, InFlight: 1, Dropped: true},
			{RTT: 7 * time.Millisecond, InFlight: 1, Dropped: true},
		}
		if len(rec.samples) != len(want) {
			t.Fatalf("samples %+v, want %+v", rec.samples, want)
		}
		for i, s := range rec.samples {
			s.Now = time.Time{}
			if s != want[i] {
				t.Errorf("sample %d: %+v, want %+v", i, s, want[i])
			}
		}
		checkEmpty(t, l)
	})
}

// The guard's priority comes from the attempt's context: with the
// critical reserve in force, a Normal attempt is refused where a
// Critical one is admitted.
func TestGuardPriority(t *testing.T) {
	l := mustNew(t, Config{Algorithm: Fixed(3)}) // reserve 1
	crit, _ := l.AcquirePriority(epoch, Critical)
	norm, _ := l.Acquire(epoch)
	g := l.Guard()
	if _, err := g.Admit(context.Background()); !errors.Is(err, ErrLimited) {
		t.Errorf("Normal at 2 of 3: %v, want ErrLimited", err)
	}
	ticket, err := g.Admit(WithPriority(context.Background(), Critical))
	if err != nil {
		t.Fatalf("Critical at 2 of 3: %v", err)
	}
	g.Done(context.Background(), ticket, admission.Outcome{})
	crit.Ignore()
	norm.Ignore()
	checkEmpty(t, l)
}

func TestGuardAllocs(t *testing.T) {
	l := mustNew(t, Config{Algorithm: Fixed(4)})
	g := l.Guard()
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		ticket, err := g.Admit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g.Done(context.Background(), ticket, admission.Outcome{})
	}); n != 0 {
		t.Errorf("Admit+Done: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		tok, _ := l.AcquirePriority(epoch, Sheddable)
		tok.Served(epoch)
		tok, _ = l.Wait(ctx, Critical)
		tok.Served(epoch)
	}); n != 0 {
		t.Errorf("AcquirePriority, Wait with a slot free: %v allocations, want 0", n)
	}
}
