package engine

import (
	"testing"
	"time"
)

// chain reschedules every event it receives until limit events have run,
// keeping the queue at a steady size.
type chain struct{ limit uint64 }

func (c *chain) Handle(e *Engine, ev Event) {
	if e.Events() < c.limit {
		e.After(time.Duration(e.Uint64()%uint64(time.Millisecond)), ev.Kind, ev.ID, ev.Arg)
	}
}

func TestEngineOrder(t *testing.T) {
	e := New(1, 0)
	var got []int32
	rec := recorder(func(_ *Engine, ev Event) { got = append(got, ev.ID) })
	e.At(5, 0, 3, 0)
	e.At(1, 0, 1, 0)
	e.At(5, 0, 4, 0) // same time as id 3, scheduled later: runs after it
	e.At(2, 0, 2, 0)
	e.At(9, 0, 5, 0)
	e.Run(rec, 8)
	want := []int32{1, 2, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if e.Elapsed() != 8 {
		t.Errorf("clock after run(until 8) = %v, want 8ns", e.Elapsed())
	}
	if e.Now() != Epoch.Add(8) {
		t.Errorf("Now() = %v, want Epoch+8ns", e.Now())
	}
}

// Random times, many of them equal or far apart: events leave in time
// order, and those due at the same instant in the order they were
// scheduled (their ids). Events scheduled from handlers, later and in the
// past (due now), keep the order too.
func TestEngineRandomOrder(t *testing.T) {
	for _, spread := range []uint64{3, 100, 1 << 20, 1 << 42} {
		e := New(7, spread)
		id := int32(0)
		for ; id < 1000; id++ {
			e.At(time.Duration(e.Uint64()%spread), 0, id, 0)
		}
		var last Event
		first := true
		e.Run(recorder(func(e *Engine, ev Event) {
			if !first && (ev.At < last.At || ev.At == last.At && ev.ID < last.ID) {
				t.Fatalf("spread %d: event %+v delivered after %+v", spread, ev, last)
			}
			first, last = false, ev
			if id < 3000 {
				e.After(time.Duration(e.Uint64()%spread), 0, id, 0)
				id++
				e.At(0, 0, id, 0)
				id++
			}
		}), -1)
		if e.Events() != 3000 {
			t.Errorf("spread %d: delivered %d events, want 3000", spread, e.Events())
		}
	}
}

type recorder func(*Engine, Event)

func (r recorder) Handle(e *Engine, ev Event) { r(e, ev) }

// BenchmarkEngine measures the event loop: each event schedules the next,
// with 1024 events pending.
func BenchmarkEngine(b *testing.B) {
	b.ReportAllocs()
	e := New(1, 0)
	for i := range 1024 {
		e.After(time.Duration(i), 0, int32(i), 0)
	}
	c := &chain{limit: uint64(b.N)}
	b.ResetTimer()
	start := time.Now()
	e.Run(c, -1)
	b.ReportMetric(float64(e.Events())/time.Since(start).Seconds(), "events/s")
}

// A closed done channel stops a run that would otherwise go on forever.
func TestEngineStops(t *testing.T) {
	e := New(1, 0)
	done := make(chan struct{})
	close(done)
	e.StopOn(done)
	e.After(0, 0, 0, 0)
	e.Run(&chain{limit: ^uint64(0)}, -1)
	if e.Events() > 1<<16 {
		t.Errorf("ran %d events after done was closed, want at most %d", e.Events(), 1<<16)
	}
}
