package sim

import (
	"testing"
	"time"
)

// chain reschedules every event it receives until limit events have run,
// keeping the queue at a steady size.
type chain struct{ limit uint64 }

func (c *chain) handle(e *engine, ev event) {
	if e.events < c.limit {
		e.after(time.Duration(e.u64()%uint64(time.Millisecond)), ev.kind, ev.id, ev.arg)
	}
}

func TestEngineOrder(t *testing.T) {
	e := newEngine(1, 0)
	var got []int32
	rec := recorder(func(_ *engine, ev event) { got = append(got, ev.id) })
	e.at(5, 0, 3, 0)
	e.at(1, 0, 1, 0)
	e.at(5, 0, 4, 0) // same time as id 3, scheduled later: runs after it
	e.at(2, 0, 2, 0)
	e.at(9, 0, 5, 0)
	e.run(rec, 8)
	want := []int32{1, 2, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if e.elapsed() != 8 {
		t.Errorf("clock after run(until 8) = %v, want 8ns", e.elapsed())
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
		e := newEngine(7, spread)
		id := int32(0)
		for ; id < 1000; id++ {
			e.at(time.Duration(e.u64()%spread), 0, id, 0)
		}
		var last event
		first := true
		e.run(recorder(func(e *engine, ev event) {
			if !first && (ev.at < last.at || ev.at == last.at && ev.id < last.id) {
				t.Fatalf("spread %d: event %+v delivered after %+v", spread, ev, last)
			}
			first, last = false, ev
			if id < 3000 {
				e.after(time.Duration(e.u64()%spread), 0, id, 0)
				id++
				e.at(0, 0, id, 0)
				id++
			}
		}), -1)
		if e.events != 3000 {
			t.Errorf("spread %d: delivered %d events, want 3000", spread, e.events)
		}
	}
}

type recorder func(*engine, event)

func (r recorder) handle(e *engine, ev event) { r(e, ev) }

// BenchmarkEngine measures the event loop: each event schedules the next,
// with 1024 events pending.
func BenchmarkEngine(b *testing.B) {
	b.ReportAllocs()
	e := newEngine(1, 0)
	for i := range 1024 {
		e.after(time.Duration(i), 0, int32(i), 0)
	}
	c := &chain{limit: uint64(b.N)}
	b.ResetTimer()
	start := time.Now()
	e.run(c, -1)
	b.ReportMetric(float64(e.events)/time.Since(start).Seconds(), "events/s")
}

// A closed done channel stops a run that would otherwise go on forever.
func TestEngineStops(t *testing.T) {
	e := newEngine(1, 0)
	done := make(chan struct{})
	close(done)
	e.done = done
	e.after(0, 0, 0, 0)
	e.run(&chain{limit: ^uint64(0)}, -1)
	if e.events > 1<<16 {
		t.Errorf("ran %d events after done was closed, want at most %d", e.events, 1<<16)
	}
}
