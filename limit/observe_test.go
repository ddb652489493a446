package limit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/observe"
)

type ctxKey struct{}

// seen is an event and the value under ctxKey in its context.
type seen struct {
	E   observe.Event
	Ctx any
}

// eventLog keeps every event, with the context value it came with.
type eventLog struct {
	mu     sync.Mutex
	events []seen
}

func (r *eventLog) Observe(ctx context.Context, e observe.Event) {
	r.mu.Lock()
	r.events = append(r.events, seen{e, ctx.Value(ctxKey{})})
	r.mu.Unlock()
}

func (r *eventLog) take() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.events
	r.events = nil
	return s
}

// cmpErrors compares errors by message: a *WaitError is a new value for
// each refusal.
var cmpErrors = cmp.Comparer(func(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
})

// script is an Algorithm whose Update returns the next of its limits.
type script struct {
	limits []int
	i      int
}

func (s *script) Limit() int { return s.limits[s.i] }
func (s *script) Update(Sample) int {
	if s.i < len(s.limits)-1 {
		s.i++
	}
	return s.limits[s.i]
}

// LimitChanged comes only when a release moves the limit, with the
// requests in flight once that release's slot is free; an Ignore never
// moves it.
func TestObserveLimitChanged(t *testing.T) {
	r := &eventLog{}
	l := mustNew(t, Config{Algorithm: &script{limits: []int{3, 3, 5, 5, 2}}, CriticalShare: -1, Observer: r})
	var toks []Token
	for range 3 {
		tok, ok := l.Acquire(epoch)
		if !ok {
			t.Fatal("Acquire under the limit refused")
		}
		toks = append(toks, tok)
	}
	toks[0].Served(epoch.Add(time.Millisecond))  // 3 -> 3: nothing
	toks[1].Ignore()                             // no sample: nothing
	toks[2].Dropped(epoch.Add(time.Millisecond)) // 3 -> 5
	tok, _ := l.Acquire(epoch)
	tok2, _ := l.Acquire(epoch)
	tok.Served(epoch.Add(time.Millisecond))  // 5 -> 5: nothing
	tok2.Served(epoch.Add(time.Millisecond)) // 5 -> 2
	want := []seen{
		{E: observe.Event{Kind: observe.LimitChanged, Limit: 5, InFlight: 0}},
		{E: observe.Event{Kind: observe.LimitChanged, Limit: 2, InFlight: 0}},
	}
	if diff := cmp.Diff(want, r.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The in-flight count is the one after the release.
	l = mustNew(t, Config{Algorithm: &script{limits: []int{4, 6}}, CriticalShare: -1, Observer: r})
	a, _ := l.Acquire(epoch)
	b, _ := l.Acquire(epoch)
	a.Served(epoch.Add(time.Millisecond))
	b.Ignore()
	want = []seen{{E: observe.Event{Kind: observe.LimitChanged, Limit: 6, InFlight: 1}}}
	if diff := cmp.Diff(want, r.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// AcquirePriority reports each refusal with the request's priority
// class; a priority the package does not name is sheddable.
func TestObserveAcquireRefused(t *testing.T) {
	r := &eventLog{}
	l := mustNew(t, Config{Algorithm: Fixed(10), Observer: r}) // reserve 1: Normal 9, Sheddable 8
	var toks []Token
	for range 8 {
		tok, _ := l.AcquirePriority(epoch, Critical)
		toks = append(toks, tok)
	}
	for _, p := range []Priority{Sheddable, Priority(7), Normal, Critical, Normal, Critical, Critical} {
		if tok, ok := l.AcquirePriority(epoch, p); ok {
			toks = append(toks, tok)
		}
	}
	want := []seen{
		{E: observe.Event{Kind: observe.LimitRefused, Priority: "sheddable", Err: ErrLimited}},
		{E: observe.Event{Kind: observe.LimitRefused, Priority: "sheddable", Err: ErrLimited}},
		// 8 in flight: a Normal request gets the 9th slot, a Critical one
		// the 10th, then the limit is full.
		{E: observe.Event{Kind: observe.LimitRefused, Priority: "normal", Err: ErrLimited}},
		{E: observe.Event{Kind: observe.LimitRefused, Priority: "critical", Err: ErrLimited}},
		{E: observe.Event{Kind: observe.LimitRefused, Priority: "critical", Err: ErrLimited}},
	}
	if diff := cmp.Diff(want, r.take(), cmpErrors); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, tok := range toks {
		tok.Ignore()
	}
	checkEmpty(t, l)
}

// Wait reports, with its context, each request that leaves the queue
// (with the time it spent there and why it left) and each refusal.
func TestObserveWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &eventLog{}
		l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: 50 * time.Millisecond, MaxWaiters: 1, Observer: r})
		ctx := context.WithValue(t.Context(), ctxKey{}, "call")
		t0 := time.Now()
		out := make(chan waited, 4)
		hold, err := l.Wait(ctx, Normal) // a free slot: no event
		if err != nil {
			t.Fatal(err)
		}
		// a waits 20 ms and gets the slot hold releases.
		waitFor(ctx, l, Critical, "a", t0, out)
		time.Sleep(20 * time.Millisecond)
		hold.Served(time.Now())
		a := await.Recv(t, out, "a's slot")
		if a.err != nil {
			t.Fatal(a.err)
		}
		// b queues and times out after MaxWait; c finds the queue full.
		waitFor(ctx, l, Normal, "b", t0, out)
		if _, err := l.Wait(ctx, Sheddable); !errors.Is(err, ErrLimited) {
			t.Fatalf("Wait with the queue full: %v, want ErrLimited", err)
		}
		time.Sleep(50 * time.Millisecond)
		if b := await.Recv(t, out, "b's refusal"); !errors.Is(b.err, ErrLimited) {
			t.Fatalf("b: %v, want ErrLimited", b.err)
		}
		// d's caller gives up after 10 ms.
		dctx, cancel := context.WithCancel(ctx)
		waitFor(dctx, l, Priority(7), "d", t0, out)
		time.Sleep(10 * time.Millisecond)
		cancel()
		if d := await.Recv(t, out, "d's cancellation"); !errors.Is(d.err, context.Canceled) {
			t.Fatalf("d: %v, want context.Canceled", d.err)
		}
		a.tok.Served(time.Now())
		checkEmpty(t, l)
		timedOut := &WaitError{Waited: 50 * time.Millisecond}
		want := []seen{
			{E: observe.Event{Kind: observe.LimitWaited, Priority: "critical", Delay: 20 * time.Millisecond}, Ctx: "call"},
			{E: observe.Event{Kind: observe.LimitRefused, Priority: "sheddable", Err: ErrLimited}, Ctx: "call"},
			{E: observe.Event{Kind: observe.LimitWaited, Priority: "normal", Delay: 50 * time.Millisecond, Err: timedOut}, Ctx: "call"},
			{E: observe.Event{Kind: observe.LimitRefused, Priority: "normal", Delay: 50 * time.Millisecond, Err: timedOut}, Ctx: "call"},
			{E: observe.Event{Kind: observe.LimitWaited, Priority: "sheddable", Delay: 10 * time.Millisecond, Err: context.Canceled}, Ctx: "call"},
		}
		if diff := cmp.Diff(want, r.take(), cmpErrors); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// Without a queue, Wait refuses at once, and reports it once (not also
// as AcquirePriority's refusal).
func TestObserveWaitNoQueue(t *testing.T) {
	r := &eventLog{}
	l := mustNew(t, Config{Algorithm: Fixed(1), MaxWait: -1, Observer: r})
	ctx := context.WithValue(context.Background(), ctxKey{}, "call")
	tok, err := l.Wait(ctx, Normal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Wait(ctx, Critical); !errors.Is(err, ErrLimited) {
		t.Fatalf("Wait at the limit: %v, want ErrLimited", err)
	}
	tok.Served(epoch)
	want := []seen{{E: observe.Event{Kind: observe.LimitRefused, Priority: "critical", Err: ErrLimited}, Ctx: "call"}}
	if diff := cmp.Diff(want, r.take(), cmpErrors); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// counter counts events: an observer that allocates nothing.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) Observe(context.Context, observe.Event) { c.mu.Lock(); c.n++; c.mu.Unlock() }

// An observed refusal and an observed limit change allocate nothing.
func TestObserveNoAllocation(t *testing.T) {
	c := &counter{}
	l := mustNew(t, Config{Algorithm: &script{limits: []int{1, 2, 1}}, Observer: c})
	allocs := testing.AllocsPerRun(100, func() {
		tok, _ := l.Acquire(epoch)
		_, _ = l.Acquire(epoch) // refused at limit 1, or admitted at 2
		tok.Served(epoch)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per acquire, refusal and release", allocs)
	}
	if c.n == 0 {
		t.Error("no event reached the observer")
	}
}
