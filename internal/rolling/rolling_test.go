package rolling

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/swarm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	sec = int64(time.Second)
	ms  = int64(time.Millisecond)
)

func TestWindow(t *testing.T) {
	type op struct {
		fold   bool  // Fold(at) instead of Add/AddAt
		at     int64 // seconds; < 0 means Add (striped)
		da, db int64
	}
	tests := []struct {
		name   string
		ops    []op
		now    int64 // seconds
		wantA  int64
		wantB  int64
		window time.Duration
		n      int
	}{
		{
			name:  "direct adds inside the window",
			ops:   []op{{at: 0, da: 1}, {at: 5, da: 2, db: 1}, {at: 9, db: 3}},
			now:   9,
			wantA: 3, wantB: 4,
			window: 10 * time.Second, n: 10,
		},
		{
			name:  "old buckets leave the window",
			ops:   []op{{at: 0, da: 1}, {at: 5, da: 2, db: 1}, {at: 12, db: 3}},
			now:   12, // buckets 3..12 remain: 0 is gone
			wantA: 2, wantB: 4,
			window: 10 * time.Second, n: 10,
		},
		{
			name: "striped counts spread over the time since the last fold",
			// 20 adds between t=0 and t=20: half of the interval is
			// inside the 10 s window ending at 20 (buckets 11..20,
			// covering [11, 20] plus the part of bucket 20 up to 20).
			ops:    []op{{fold: true, at: 0}, {at: -1, da: 20}, {fold: true, at: 20}},
			now:    20,
			wantA:  9, // [11 s, 20 s] is 9/20 of [0, 20]
			window: 10 * time.Second, n: 10,
		},
		{
			name:  "a fold at the same instant lands in one bucket",
			ops:   []op{{fold: true, at: 3}, {at: -1, da: 7, db: 2}, {fold: true, at: 3}},
			now:   3,
			wantA: 7, wantB: 2,
			window: 10 * time.Second, n: 10,
		},
		{
			name:   "a fold far in the future drops everything",
			ops:    []op{{fold: true, at: 0}, {at: -1, da: 7}, {fold: true, at: 1000}},
			now:    1000,
			wantA:  0, // [991, 1000] is 0.9% of 7: rounds to 0
			window: 10 * time.Second, n: 10,
		},
		{
			name:   "undone counts never make a total negative",
			ops:    []op{{at: 0, da: 1}, {at: 15, da: -3}},
			now:    15,
			wantA:  0,
			window: 10 * time.Second, n: 10,
		},
		{
			name:   "time going back counts as the last fold",
			ops:    []op{{fold: true, at: 10}, {at: -1, da: 4}, {fold: true, at: 2}},
			now:    10,
			wantA:  4,
			window: 10 * time.Second, n: 10,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := New(tc.window, tc.n)
			for _, o := range tc.ops {
				switch {
				case o.fold:
					w.Fold(o.at * sec)
				case o.at < 0:
					w.Add(o.da, o.db)
				default:
					w.Fold(o.at * sec)
					w.AddAt(o.at*sec, o.da, o.db)
				}
			}
			a, b := w.Sums(tc.now * sec)
			if a != tc.wantA || b != tc.wantB {
				t.Errorf("Sums = %d, %d; want %d, %d", a, b, tc.wantA, tc.wantB)
			}
		})
	}
}

func TestSpan(t *testing.T) {
	tests := []struct {
		name       string
		fold       int64 // ms: the last fold
		now        int64 // ms
		start, end int64 // ms
	}{
		{"inside a bucket", 0, 1500, 1000, 2000},
		{"at a bucket's start", 0, 2000, 2000, 3000},
		{"before the last fold counts as the fold", 3500, 1200, 3000, 4000},
		{"before zero", -2500, -2500, -3000, -2000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := New(10*time.Second, 10)
			w.Reset(tc.fold * ms)
			start, end := w.Span(tc.now * ms)
			if start != tc.start*ms || end != tc.end*ms {
				t.Fatalf("Span = [%d, %d) ms, want [%d, %d)", start/ms, end/ms, tc.start, tc.end)
			}
			// AddAt anywhere in the span lands in the bucket Sums reads.
			w.AddAt(end-1, 1, 0)
			if a, _ := w.Sums(start); a != 1 {
				t.Fatalf("Sums at the span's start = %d, want the 1 added at its end", a)
			}
		})
	}
}

// TestSpreadKeepsTotal checks that a fold inside the window loses nothing
// to rounding, for many interval lengths and counts.
func TestSpreadKeepsTotal(t *testing.T) {
	for c := int64(1); c < 200; c += 7 {
		for span := int64(1); span < 10*sec; span += sec/3 + 1 {
			w := New(10*time.Second, 10)
			w.Fold(0)
			w.Add(c, 2*c)
			w.Fold(span)
			if a, b := w.Sums(span); a != c || b != 2*c {
				t.Fatalf("c=%d span=%d: Sums = %d, %d; want %d, %d", c, span, a, b, c, 2*c)
			}
		}
	}
}

func TestConcurrentAdds(t *testing.T) {
	w := New(10*time.Second, 10)
	var mu sync.Mutex
	const workers, each = 16, 1000
	swarm.Go(t, workers, func(g int) {
		for i := range each {
			w.Add(1, 1)
			if i%100 == 0 {
				mu.Lock()
				w.Fold(int64(g)) // same bucket: nothing is dropped
				mu.Unlock()
			}
		}
	})
	w.Fold(0)
	if a, b := w.Sums(16); a != workers*each || b != workers*each {
		t.Fatalf("Sums = %d, %d; want %d each", a, b, workers*each)
	}
}

func BenchmarkAddParallel(b *testing.B) {
	b.ReportAllocs()
	w := New(10*time.Second, 10)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Add(1, 0)
		}
	})
}

// FuzzWindow applies random adds, folds and time steps, and checks that
// totals never go negative, never exceed what was added, and equal it
// while everything added is younger than the window.
func FuzzWindow(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, int64(0))
	f.Add([]byte{0, 0, 255, 255, 9, 200}, int64(1<<62))
	f.Add([]byte{3, 3, 3, 130, 3, 3, 3}, int64(-1<<63))
	f.Fuzz(func(t *testing.T, ops []byte, start int64) {
		w := New(10*time.Second, 10)
		w.Reset(start)
		now := start
		var added int64
		oldest := int64(0) // time of the oldest count since the last full expiry
		haveOldest := false
		for _, op := range ops {
			switch op % 4 {
			case 0:
				w.Add(int64(op>>2), 1)
				added += int64(op >> 2)
			case 1:
				w.Fold(now)
			case 2:
				if now < 1<<62 { // stay where Window works
					now += int64(op>>2) * (sec / 8)
				}
			case 3:
				w.Fold(now)
				w.AddAt(now, int64(op>>2), 0)
				added += int64(op >> 2)
				if !haveOldest {
					oldest, haveOldest = now, true
				}
			}
			if op%4 == 0 && !haveOldest {
				oldest, haveOldest = w.last, true
			}
			a, b := w.Sums(now)
			if a < 0 || b < 0 || a > added {
				t.Fatalf("Sums = %d, %d with %d added", a, b, added)
			}
		}
		w.Fold(now)
		a, _ := w.Sums(now)
		if haveOldest && now-oldest < w.Len()-w.width && a != added && now < 1<<62 {
			t.Fatalf("everything is %d ns old, inside the window, but Sums = %d of %d", now-oldest, a, added)
		}
	})
}

// TestRehash checks that Rehash moves stack blocks to other stripes and
// that counts added before and after it are all folded.
func TestRehash(t *testing.T) {
	w := New(10*time.Second, 10)
	w.Fold(0)
	before := make([]int, 64)
	for b := range before {
		before[b] = w.StripeOf(uint64(b))
		if before[b] < 0 || before[b] >= Stripes {
			t.Fatalf("StripeOf(%d) = %d, not a stripe", b, before[b])
		}
	}
	w.Add(3, 1)
	w.Rehash()
	moved := 0
	for b := range before {
		if w.StripeOf(uint64(b)) != before[b] {
			moved++
		}
	}
	if moved < len(before)/2 {
		t.Fatalf("Rehash moved %d of %d blocks to another stripe", moved, len(before))
	}
	w.Add(4, 2)
	w.Fold(0)
	if a, b := w.Sums(0); a != 7 || b != 3 {
		t.Fatalf("Sums = %d, %d; want 7, 3", a, b)
	}
}
