package limit

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/swarm"
)

// waited is one Wait's result: who waited, what it got, and when (since
// the bubble's start).
type waited struct {
	name string
	tok  Token
	err  error
	at   time.Duration
}

// waitFor starts a Wait in a goroutine and returns once it is blocked (in
// the queue, or done).
func waitFor(ctx context.Context, l *Limiter, p Priority, name string, t0 time.Time, out chan<- waited) {
	go func() {
		tok, err := l.Wait(ctx, p)
		out <- waited{name, tok, err, time.Since(t0)}
	}()
	synctest.Wait()
}

func mustNew(t testing.TB, cfg Config) *Limiter {
	t.Helper()
	return configtest.Must(New(cfg))(t)
}

// checkEmpty fails unless nothing is in flight or queued.
func checkEmpty(t *testing.T, l *Limiter) {
	t.Helper()
	l.q.mu.Lock()
	n := l.q.n
	l.q.mu.Unlock()
	if l.InFlight() != 0 || l.waiters.Load() != 0 || n != 0 {
		t.Errorf("in flight %d, waiters %d, queued %d; want all 0", l.InFlight(), l.waiters.Load(), n)
	}
}

// serveInOrder releases hold, then each granted token in turn, and
// returns the names in the order they got the slot.
func serveInOrder(t *testing.T, hold Token, n int, out <-chan waited) []string {
	t.Helper()
	var order []string
	hold.Served(time.Now())
	for range n {
		r := await.Recv(t, out, "a waiter's result")
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		order = append(order, r.name)
		r.tok.Served(time.Now())
	}
	return order
}

// Before the queue is congested, the oldest waiter gets the slot first.
func TestWaitFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: time.Second, MaxWaiters: 8})
		hold, err := l.Wait(t.Context(), Normal)
		if err != nil {
			t.Fatal(err)
		}
		out := make(chan waited, 3)
		for _, name := range []string{"a", "b", "c"} {
			waitFor(t.Context(), l, Normal, name, t0, out)
			time.Sleep(time.Millisecond)
		}
		got := serveInOrder(t, hold, 3, out)
		if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
			t.Errorf("served %v, want %v (FIFO)", got, want)
		}
		checkEmpty(t, l)
	})
}

// Once the queue has not been empty for CongestionInterval, the newest
// waiter gets the slot first.
func TestWaitLIFOWhenCongested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: time.Second, CongestedWait: time.Second, MaxWaiters: 8})
		hold, _ := l.Wait(t.Context(), Normal)
		out := make(chan waited, 3)
		for _, name := range []string{"a", "b", "c"} {
			waitFor(t.Context(), l, Normal, name, t0, out)
			time.Sleep(time.Millisecond)
		}
		time.Sleep(DefaultCongestionInterval) // congested from 100 ms on
		got := serveInOrder(t, hold, 3, out)
		if want := []string{"c", "b", "a"}; !slices.Equal(got, want) {
			t.Errorf("served %v, want %v (LIFO)", got, want)
		}
		checkEmpty(t, l)
	})
}

// CoDel: a waiter gives up once the queue is congested and it has waited
// CongestedWait; before congestion, after MaxWait.
func TestWaitTimeouts(t *testing.T) {
	t.Run("congested", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: time.Second, MaxWaiters: 8})
			hold, _ := l.Wait(t.Context(), Normal)
			out := make(chan waited, 3)
			waitFor(t.Context(), l, Normal, "a", t0, out) // queue non-empty from 0
			time.Sleep(99 * time.Millisecond)
			waitFor(t.Context(), l, Normal, "b", t0, out) // congested at 100 ms, then 5 ms
			time.Sleep(4 * time.Millisecond)
			waitFor(t.Context(), l, Normal, "c", t0, out) // congested: 5 ms
			for _, want := range []struct {
				name   string
				at     time.Duration
				waited time.Duration
			}{
				{"a", 100 * time.Millisecond, 100 * time.Millisecond},
				{"b", 104 * time.Millisecond, 5 * time.Millisecond},
				{"c", 108 * time.Millisecond, 5 * time.Millisecond},
			} {
				r := await.Recv(t, out, "a timed-out waiter")
				var we *WaitError
				if r.name != want.name || r.at != want.at || !errors.As(r.err, &we) || !errors.Is(r.err, ErrLimited) ||
					we.Waited != want.waited || !we.Congested {
					t.Errorf("%s at %v: %v; want %s at %v, a congested WaitError after %v",
						r.name, r.at, r.err, want.name, want.at, want.waited)
				}
			}
			hold.Served(time.Now())
			checkEmpty(t, l)
		})
	})
	t.Run("not congested", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: 50 * time.Millisecond})
			hold, _ := l.Wait(t.Context(), Normal)
			out := make(chan waited, 1)
			waitFor(t.Context(), l, Normal, "a", t0, out)
			r := await.Recv(t, out, "the waiter")
			var we *WaitError
			if !errors.As(r.err, &we) || we.Waited != 50*time.Millisecond || we.Congested || r.at != 50*time.Millisecond {
				t.Errorf("at %v: %v (%+v); want an uncongested WaitError after 50ms", r.at, r.err, we)
			}
			hold.Ignore()
			checkEmpty(t, l)
		})
	})
}

// A waiter whose context ends leaves the queue at once with the
// context's cause, and the slot released later is not given to it.
func TestWaitContextEnds(t *testing.T) {
	errGone := errors.New("caller gone")
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: time.Second, MaxWaiters: 8})
		hold, _ := l.Wait(t.Context(), Normal)
		out := make(chan waited, 2)
		ctx, cancel := context.WithCancelCause(t.Context())
		waitFor(ctx, l, Normal, "cancelled", t0, out)
		dctx, dcancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer dcancel()
		waitFor(dctx, l, Critical, "deadline", t0, out)
		time.Sleep(10 * time.Millisecond)
		cancel(errGone)
		r := await.Recv(t, out, "the cancelled waiter")
		if r.name != "cancelled" || !errors.Is(r.err, errGone) || r.at != 10*time.Millisecond || r.tok != (Token{}) {
			t.Errorf("%s at %v: %v, %+v; want cancelled at 10ms with its cause and no token", r.name, r.at, r.err, r.tok)
		}
		r = await.Recv(t, out, "the waiter past its deadline")
		if r.name != "deadline" || !errors.Is(r.err, context.DeadlineExceeded) || r.at != 30*time.Millisecond {
			t.Errorf("%s at %v: %v; want deadline at 30ms, DeadlineExceeded", r.name, r.at, r.err)
		}
		hold.Served(time.Now())
		checkEmpty(t, l)
		// A context already ended gets no slot, even a free one.
		if _, err := l.Wait(ctx, Critical); !errors.Is(err, errGone) || l.InFlight() != 0 {
			t.Errorf("Wait on an ended context: %v, in flight %d; want its cause, 0", err, l.InFlight())
		}
	})
}

// A released slot goes to the highest priority that has room: with a
// limit of 10, Critical may use 10, Normal 9, Sheddable 8.
func TestWaitPriorities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, Config{Algorithm: Fixed(10), MaxWait: time.Second, CongestedWait: time.Second})
		var held []Token
		for range 10 {
			tok, err := l.Wait(t.Context(), Critical)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, tok)
		}
		out := make(chan waited, 3)
		waitFor(t.Context(), l, Sheddable, "sheddable", t0, out)
		waitFor(t.Context(), l, Normal, "normal", t0, out)
		waitFor(t.Context(), l, Critical, "critical", t0, out)
		release := func() { held[0].Served(time.Now()); held = held[1:] }
		expect := func(name string, inFlight int) {
			t.Helper()
			synctest.Wait()
			if name != "" {
				r := await.Recv(t, out, name)
				if r.name != name || r.err != nil {
					t.Fatalf("got %s (%v), want %s", r.name, r.err, name)
				}
				held = append(held, r.tok)
			}
			select {
			case r := <-out:
				t.Fatalf("%s got a slot too", r.name)
			default:
			}
			if l.InFlight() != inFlight {
				t.Fatalf("in flight %d, want %d", l.InFlight(), inFlight)
			}
		}
		release()
		expect("critical", 10) // the slot passes over: in flight stays 10
		release()
		expect("", 9) // Normal may not use the 10th slot
		release()
		expect("normal", 9)
		release()
		expect("", 8)
		release()
		expect("sheddable", 8)
		for len(held) > 0 {
			release()
		}
		checkEmpty(t, l)
	})
}

// Refusals without a wait: no queue (MaxWait zero), a full queue.
func TestWaitRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: -1})
		hold, _ := l.Wait(t.Context(), Normal)
		start := time.Now()
		if _, err := l.Wait(t.Context(), Critical); err != ErrLimited || time.Since(start) != 0 {
			t.Errorf("no queue: %v after %v, want ErrLimited at once", err, time.Since(start))
		}
		hold.Ignore()

		l = mustNew(t, Config{Algorithm: Fixed(1), MaxWait: time.Second}) // MaxWaiters: the limit, 1
		hold, _ = l.Wait(t.Context(), Normal)
		out := make(chan waited, 1)
		waitFor(t.Context(), l, Normal, "queued", start, out)
		if _, err := l.Wait(t.Context(), Normal); err != ErrLimited || time.Since(start) != 0 {
			t.Errorf("full queue: %v after %v, want ErrLimited at once", err, time.Since(start))
		}
		hold.Served(time.Now())
		r := await.Recv(t, out, "the queued waiter")
		r.tok.Served(time.Now())
		checkEmpty(t, l)
	})
}

func TestGiveUpAt(t *testing.T) {
	ms := func(n int) time.Time { return epoch.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name             string
		start, lastEmpty time.Time
		maxWait          time.Duration
		want             time.Time
	}{
		{"empty queue, short MaxWait", ms(0), ms(0), 50 * time.Millisecond, ms(50)},
		{"empty queue: congested at the interval", ms(0), ms(0), time.Second, ms(100)},
		{"joins a queue about to be congested", ms(98), ms(0), time.Second, ms(103)},
		{"joins a congested queue", ms(500), ms(0), time.Second, ms(505)},
		{"MaxWait below the target", ms(500), ms(0), 2 * time.Millisecond, ms(502)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := giveUpAt(tc.start, tc.lastEmpty, tc.maxWait, DefaultCongestedWait, DefaultCongestionInterval)
			if !got.Equal(tc.want) {
				t.Errorf("giveUpAt = %v, want %v", got.Sub(epoch), tc.want.Sub(epoch))
			}
		})
	}
}

// Many goroutines wait, with every priority, some giving up and some
// cancelled: never more than the limit in flight, and nothing left in
// flight or queued at the end.
func TestWaitStress(t *testing.T) {
	const limit = 4
	l := mustNew(t, Config{Algorithm: Fixed(limit), MaxWait: 2 * time.Millisecond, MaxWaiters: 64})
	var held, served, refused atomic.Int64
	swarm.Seeded(t, 48, 1, func(rng *rand.Rand) {
		for range 300 {
			ctx, cancel := context.WithCancel(context.Background())
			if rng.IntN(8) == 0 {
				go cancel()
			}
			tok, err := l.Wait(ctx, Priority(rng.IntN(3)))
			if err != nil {
				refused.Add(1)
				cancel()
				continue
			}
			if n := held.Add(1); n > limit {
				t.Errorf("%d held, over the limit %d", n, limit)
			}
			runtime.Gosched()
			held.Add(-1)
			served.Add(1)
			switch rng.IntN(3) {
			case 0:
				tok.Served(time.Now())
			case 1:
				tok.Dropped(time.Now())
			default:
				tok.Ignore()
			}
			cancel()
		}
	})
	checkEmpty(t, l)
	t.Logf("%d served, %d refused", served.Load(), refused.Load())
}

// A request of higher priority that finds the queue full takes the place
// of the newest waiter of the lowest priority below its own, which is
// refused; one of the same or lower priority is refused itself.
func TestWaitEvictsLowerPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: time.Second, MaxWaiters: 2, CriticalShare: -1})
		start := time.Now()
		hold, _ := l.Wait(t.Context(), Normal)
		out := make(chan waited, 4)
		waitFor(t.Context(), l, Normal, "normal", start, out)
		waitFor(t.Context(), l, Sheddable, "sheddable", start, out)
		if _, err := l.Wait(t.Context(), Sheddable); err != ErrLimited {
			t.Errorf("a sheddable request at a full queue: %v, want ErrLimited", err)
		}
		waitFor(t.Context(), l, Critical, "critical", start, out)
		r := await.Recv(t, out, "the evicted waiter")
		var we *WaitError
		if r.name != "sheddable" || !errors.As(r.err, &we) || !we.Evicted || !errors.Is(r.err, ErrLimited) {
			t.Errorf("%s: %v, want the sheddable waiter evicted with a WaitError matching ErrLimited", r.name, r.err)
		}
		if got := serveInOrder(t, hold, 2, out); !slices.Equal(got, []string{"critical", "normal"}) {
			t.Errorf("served %v, want critical, then normal", got)
		}
		checkEmpty(t, l)
	})
}

// In a congested queue, a critical waiter waits up to MaxWait, while the
// others give up after the congested wait.
func TestWaitCriticalNotHeldToCongestedWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: time.Second, MaxWaiters: 10})
		start := time.Now()
		hold, _ := l.Wait(t.Context(), Critical)
		out := make(chan waited, 4)
		waitFor(t.Context(), l, Normal, "first", start, out)
		time.Sleep(50 * time.Millisecond)
		waitFor(t.Context(), l, Normal, "normal", start, out)
		waitFor(t.Context(), l, Critical, "critical", start, out)
		// The queue is congested from 100 ms on: the normal waiters give
		// up then.
		for range 2 {
			r := await.Recv(t, out, "a normal waiter to give up")
			if r.name == "critical" || r.at != 100*time.Millisecond {
				t.Fatalf("%s gave up at %v, want the normal waiters at 100ms", r.name, r.at)
			}
		}
		time.Sleep(300 * time.Millisecond)
		hold.Served(time.Now())
		r := await.Recv(t, out, "the critical waiter")
		if r.name != "critical" || r.err != nil || r.at != 400*time.Millisecond {
			t.Errorf("%s: %v at %v, want the critical waiter served at 400ms", r.name, r.err, r.at)
		}
		r.tok.Served(time.Now())
		checkEmpty(t, l)
	})
}
