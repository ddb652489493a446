package overload

import (
	"testing"
	"time"
)

// TestMeasure checks the run's arithmetic on made-up calls and work, one
// second per phase, a capacity of 100/s.
func TestMeasure(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	calls := []call{
		// Phase 0: two calls drawn, one critical that succeeds in 20 ms.
		{scheduled: at(100), arrived: at(100), done: at(120), critical: true, ok: true},
		{scheduled: at(200), arrived: at(200), done: at(1200), critical: true},
		// Phase 3: none back until 600 ms in, then 40 in 250 ms.
		{scheduled: at(3010), arrived: at(3010), done: at(3010), refused: true},
	}
	for i := range 40 {
		d := at(3600 + 5*i)
		calls = append(calls, call{scheduled: d.Add(-10 * time.Millisecond), arrived: d.Add(-10 * time.Millisecond), done: d, ok: true})
	}
	works := []work{
		// Phase 0: 10 ms for a caller gone, 30 ms for one still there.
		{arrived: at(100), start: at(100), end: at(110), drawn: 10 * time.Millisecond, gone: true},
		{arrived: at(100), start: at(100), end: at(130), drawn: 30 * time.Millisecond},
		// Work across the end of phase 1: 50 ms in it, 50 ms in
		// phase 2, for a caller gone.
		{arrived: at(1900), start: at(1950), end: at(2050), drawn: 100 * time.Millisecond, gone: true},
		// Never got a worker: no work.
		{arrived: at(2500)},
	}
	res := measure(start, time.Second, 100, calls, works)
	p0, p1, p2, p3 := res[0], res[1], res[2], res[3]
	if p0.offered != 2 || p0.goodput != 1 || p0.critical != 2 || p0.criticalOK != 1 {
		t.Errorf("phase 0: offered %v/s, goodput %v/s, %d of %d critical calls ok; want 2/s, 1/s, 1 of 2", p0.offered, p0.goodput, p0.criticalOK, p0.critical)
	}
	if p0.wasted != 0.25 {
		t.Errorf("phase 0: wasted share %v, want 0.25 (10 ms of 40 ms)", p0.wasted)
	}
	if p0.admittedP99 != 30*time.Millisecond || p0.unloadedP99 != 30*time.Millisecond {
		t.Errorf("phase 0: admitted p99 %v, unloaded %v; want 30 ms both", p0.admittedP99, p0.unloadedP99)
	}
	if p1.wasted != 1 || p2.wasted != 1 || p1.workStarted != 1 || p2.workStarted != 1 {
		t.Errorf("work across phases 1 and 2: wasted %v and %v over %d and %d pieces, want 1 and 1 over 1 and 1", p1.wasted, p2.wasted, p1.workStarted, p2.workStarted)
	}
	if p2.admittedP99 != 150*time.Millisecond || p2.p99Ratio() != 5 {
		t.Errorf("phase 2: admitted p99 %v (%.1fx), want 150 ms (5x)", p2.admittedP99, p2.p99Ratio())
	}
	if p3.refused != 1 || p3.offered != 41 {
		t.Errorf("phase 3: %d refused, offered %v/s; want 1 and 41/s", p3.refused, p3.offered)
	}
	// 90% of 50/s over 250 ms is 11.25 calls. Windows start every 50 ms:
	// the one from 400 ms holds the 10 back by 650 ms, the one from
	// 450 ms the 20 back by 700 ms.
	if !p3.recovered || p3.recovery != 450*time.Millisecond {
		t.Errorf("phase 3: recovered %v after %v, want true after 450ms", p3.recovered, p3.recovery)
	}
	if p0.stretch != 1 {
		t.Errorf("phase 0: work took %vx its drawn time, want 1", p0.stretch)
	}
}

// TestQuantile checks the nearest-rank quantile the phases report.
func TestQuantile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	tests := []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{"none", nil, 0.99, 0},
		{"one", []time.Duration{7}, 0.5, 7},
		{"median of ten", ds, 0.5, 5},
		{"p99 of ten is the largest", ds, 0.99, 10},
		{"p0 is the smallest", ds, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quantile(tt.ds, tt.q); got != tt.want {
				t.Errorf("quantile(%v, %v) = %v, want %v", tt.ds, tt.q, got, tt.want)
			}
		})
	}
	if ds[0] != 5 {
		t.Errorf("quantile sorted its argument: %v", ds)
	}
}

// TestHarnessFailed checks the bounds past which a run measures the
// machine.
func TestHarnessFailed(t *testing.T) {
	ok := phaseResult{phase: phases[0], lag: maxLag, stretch: maxStretch}
	if why := harnessFailed([]phaseResult{ok}); why != "" {
		t.Errorf("at the bounds: %q, want none", why)
	}
	late := phaseResult{phase: phases[2], lag: maxLag + time.Millisecond}
	if why := harnessFailed([]phaseResult{ok, late}); why == "" {
		t.Error("callers started late past maxLag: no failure")
	}
	slow := phaseResult{phase: phases[1], stretch: maxStretch + 0.01}
	if why := harnessFailed([]phaseResult{ok, slow}); why == "" {
		t.Error("work stretched past maxStretch: no failure")
	}
}
