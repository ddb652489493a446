package hedge

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/tally"
	"github.com/unherd/unherd/retry/engine"
)

func TestValidate(t *testing.T) {
	row := configtest.Row[Config]
	configtest.Check(t, ErrInvalidConfig, configtest.New(New), []configtest.Case[Config]{
		row("zero", Config{}, true),
		row("fixed delay", Config{Delay: time.Millisecond}, true),
		row("negative delay", Config{Delay: -1}, false),
		row("quantile 1", Config{Quantile: 1}, false),
		row("quantile NaN", Config{Quantile: math.NaN()}, false),
		row("quantile p99", Config{Quantile: 0.99}, true),
		row("negative MinDelay", Config{MinDelay: -1}, false),
		row("negative MaxDelay", Config{MaxDelay: -1}, false),
		row("MinDelay above MaxDelay", Config{MinDelay: 2 * time.Second, MaxDelay: time.Second}, false),
		row("MinDelay with no ceiling", Config{MinDelay: 2 * time.Second}, true),
		row("negative Window", Config{Window: -1}, false),
		row("huge Window", Config{Window: 1 << 31}, false),
		row("MaxHedges 4", Config{MaxHedges: 4}, true),
		row("MaxHedges 5", Config{MaxHedges: 5}, false),
		row("negative MaxHedges", Config{MaxHedges: -1}, false),
		row("MinWinShare 1", Config{MinWinShare: 1}, false),
		row("MinWinShare NaN", Config{MinWinShare: math.NaN()}, false),
		row("MinWinShare negative turns the rule off", Config{MinWinShare: -1}, true),
		row("negative ProbeEvery", Config{ProbeEvery: -1}, false),
		row("a concurrency budget: the engine tracks every request", Config{Budget: configtest.Must(budget.NewConcurrency(budget.ConcurrencyConfig{}))(t)}, true),
	})
}

// TestDelay covers the delay as the simulator reads it: fixed, warming
// up, tracking p95 and bounded.
func TestDelay(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		samples int // 10 ms latencies observed
		want    time.Duration
		wantOK  bool
	}{
		{"fixed", Config{Delay: 7 * time.Millisecond}, 0, 7 * time.Millisecond, true},
		{"adaptive, no samples, no ceiling: no hedging", Config{}, 0, 0, false},
		{"adaptive, no samples: the ceiling", Config{MaxDelay: 50 * time.Millisecond}, 0, 50 * time.Millisecond, true},
		{"adaptive, too few samples: the largest so far", Config{}, 100, 40 * time.Millisecond, true},
		{"adaptive, too few samples: the largest, below the ceiling", Config{MaxDelay: 50 * time.Millisecond}, 100, 40 * time.Millisecond, true},
		{"adaptive, too few samples: the ceiling, below the largest", Config{MaxDelay: 20 * time.Millisecond}, 100, 20 * time.Millisecond, true},
		{"adaptive, enough samples (200 for p95)", Config{}, 256, 10 * time.Millisecond, true},
		{"bounded below", Config{MinDelay: 20 * time.Millisecond}, 256, 20 * time.Millisecond, true},
		{"bounded above", Config{MaxDelay: 5 * time.Millisecond}, 256, 5 * time.Millisecond, true},
		{"p99 needs 1000 samples", Config{Quantile: 0.99}, 512, 40 * time.Millisecond, true},
		{"p99 with 1024 samples", Config{Quantile: 0.99}, 1024, 10 * time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := mustNew(t, tc.cfg)
			for i := range tc.samples {
				d := 10 * time.Millisecond
				if i == 1 {
					d = 40 * time.Millisecond // one slow call among the first
				}
				h.Observe(d)
			}
			got, ok := h.Delay()
			if ok != tc.wantOK || math.Abs(float64(got-tc.want)) > 0.01*float64(tc.want) {
				t.Errorf("Delay() = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestDelayTracksQuantile checks the delay against the exact p95 of a
// mixed latency stream.
func TestDelayTracksQuantile(t *testing.T) {
	h := mustNew(t, Config{})
	for i := range 4096 {
		h.Observe(time.Duration(1+i%100) * time.Millisecond) // uniform 1..100 ms: p95 = 95 ms
	}
	if d, ok := h.Delay(); !ok || math.Abs(float64(d-95*time.Millisecond)) > 0.01*float64(95*time.Millisecond) {
		t.Errorf("Delay() = %v, %v; want about 95ms", d, ok)
	}
}

// TestSuspendAndProbe walks the back-off rule: losing hedges suspend
// hedging, one request in ProbeEvery still may hedge, and winning probes
// resume it. The win share decays by 1/32 per hedged request.
func TestSuspendAndProbe(t *testing.T) {
	b := &tally.Budget{Allow: -1}
	h := mustNew(t, Config{Delay: time.Millisecond, Budget: b, ProbeEvery: 4})
	if h.Suspended() || h.WinShare() != 1 {
		t.Fatalf("new hedger: suspended %v, win share %v; want on, 1", h.Suspended(), h.WinShare())
	}
	losses := 0
	for !h.Suspended() {
		h.Result(false)
		losses++
	}
	// (31/32)^n < 0.05 first at n = 95.
	if losses != 95 {
		t.Errorf("suspended after %d lost hedges, want 95", losses)
	}
	// The loss that suspended hedging doubled the gap between probes
	// from 4 to 8 requests.
	may := func(n int) []bool {
		var out []bool
		for range n {
			_, ok := h.Begin()
			out = append(out, ok)
		}
		return out
	}
	probes := func(gap, n int) []bool {
		out := make([]bool, n)
		for i := 0; i < n; i += gap {
			out[i] = true
		}
		return out
	}
	if diff := cmp.Diff(probes(8, 16), may(16)); diff != "" {
		t.Errorf("requests that may hedge while suspended (-want +got):\n%s", diff)
	}
	// Each lost probe doubles the gap, up to maxProbeGap times ProbeEvery.
	for range 10 {
		h.Result(false)
	}
	var at []int
	for i, ok := range may(8 * 4 * maxProbeGap) {
		if ok {
			at = append(at, i)
		}
	}
	for i := 1; i < len(at); i++ {
		if at[i]-at[i-1] != 4*maxProbeGap {
			t.Errorf("after 10 lost probes, probes at requests %v; want one every %d", at, 4*maxProbeGap)
			break
		}
	}
	if len(at) != 8 {
		t.Errorf("after 10 lost probes, %d probes in %d requests, want 8", len(at), 8*4*maxProbeGap)
	}
	wins := 0
	for h.Suspended() {
		h.Result(true)
		wins++
	}
	if wins != 1 {
		t.Errorf("resumed after %d winning probes, want 1", wins)
	}
	if _, ok := h.Begin(); !ok {
		t.Error("request may not hedge after resuming")
	}
	if rs := b.Counts().Records; len(rs) != 0 {
		t.Errorf("Begin recorded %d requests with the budget, want none (End does)", len(rs))
	}
}

func TestSuspendRuleOff(t *testing.T) {
	h := mustNew(t, Config{Delay: time.Millisecond, MinWinShare: -1})
	for range 1000 {
		h.Result(false)
	}
	if h.Suspended() {
		t.Error("suspended with the rule turned off")
	}
}

// TestDefaultBudget checks the default: hedges at most 10% of the requests
// in the window, failed ones included, and none before any request has
// ended.
func TestDefaultBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := mustNew(t, Config{Delay: time.Millisecond})
		ctx := context.Background()
		admit := func() bool {
			r, err := engine.AdmitRequest(ctx, h.Policy(), true)
			if err != nil {
				return false
			}
			r.Abandon()
			return true
		}
		if admit() {
			t.Error("admitted a hedge before any request")
		}
		first, _ := engine.AdmitRequest(ctx, h.Policy(), false)
		h.Begin()
		if admit() {
			t.Error("admitted a hedge for a request that has begun and not ended")
		}
		first.End(nil)
		admitted := 0
		for i := range 999 {
			r, _ := engine.AdmitRequest(ctx, h.Policy(), false)
			h.Begin()
			if admit() {
				admitted++
			}
			if i%2 == 0 {
				r.End(nil)
			} else {
				r.End(errBoom)
			}
			time.Sleep(time.Millisecond) // all within one 10 s window
		}
		for admit() {
			admitted++
		}
		if admitted != 100 {
			t.Errorf("admitted %d hedges for 1000 requests, want 100", admitted)
		}
	})
}

// TestHedgerLayout checks the layout the Hedger's comments describe: a
// size that is a multiple of a cache line (so allocations start on one),
// the per-request fields in the first line and the written ones in the
// second.
func TestHedgerLayout(t *testing.T) {
	var h Hedger
	if size := unsafe.Sizeof(h); size%64 != 0 {
		t.Errorf("Hedger is %d bytes, not a multiple of 64", size)
	}
	if off := unsafe.Offsetof(h.probeEvery); off >= 64 {
		t.Errorf("probeEvery at offset %d, outside the first line", off)
	}
	if off := unsafe.Offsetof(h.winShare); off != 64 {
		t.Errorf("winShare at offset %d, want 64", off)
	}
	if off := unsafe.Offsetof(h.maxDelay); off != 128 {
		t.Errorf("maxDelay at offset %d, want 128", off)
	}
}
