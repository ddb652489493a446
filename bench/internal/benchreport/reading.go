package main

import (
	"fmt"
	"math"
	"strings"
)

// The names the benchmarks give to the cases that are not peers.
const (
	unherd = "unherd"
	bare   = "bare" // the HTTP baseline: a plain http.Transport
	floor  = "floor-"
)

// extraUnit is the metric the hedging cases report with b.ReportMetric.
const extraUnit = "extra-req/op"

// target is what a scenario must show, as medians of one run. A zero
// field sets no target.
type target struct {
	speedup    float64 // unherd at least this many times faster than the fastest peer
	zeroAllocs bool    // unherd allocates nothing
	overhead   float64 // unherd at most this fraction slower than the bare transport
}

var targets = map[string]target{
	"FirstSuccess":    {speedup: 10, zeroAllocs: true},
	"Retry2":          {speedup: 10},
	"HTTPGet":         {overhead: 0.03},
	"HTTPGetParallel": {overhead: 0.03},
}

func isPeer(lib string) bool {
	return lib != unherd && lib != bare && !strings.HasPrefix(lib, floor)
}

// reading is the one-line summary of a scenario's medians.
func reading(t table, scenario string) (string, error) {
	u, ok := t.median[unherd]
	if !ok {
		return "", fmt.Errorf("scenario %s: no %s case", scenario, unherd)
	}
	var parts []string
	var met []bool
	parts = append(parts, fmt.Sprintf("unherd %s, %g allocs/op", duration(u["ns/op"]), u["allocs/op"]))

	peer, ok := fastestPeer(t)
	speedup := math.NaN()
	if ok {
		p := t.median[peer]
		speedup = p["ns/op"] / u["ns/op"]
		parts = append(parts, fmt.Sprintf("fastest peer %s %s: unherd is %s", peer, duration(p["ns/op"]), times(speedup)))
	} else {
		parts = append(parts, "no peer case")
	}

	tg := targets[scenario]
	var want []string
	if b, ok := t.median[bare]; ok {
		// The overhead is judged on the median of the per-round ratios,
		// which cancels load that changes between rounds; the ratio of the
		// medians is shown too.
		over := u["ns/op"]/b["ns/op"] - 1
		paired, ok := t.pairedRatio(unherd, bare, "ns/op")
		if !ok {
			paired = over + 1
		}
		parts = append(parts, fmt.Sprintf("bare transport %s: unherd overhead %+.1f%% as the median of the per-round ratios (%+.1f%% as the ratio of the medians)",
			duration(b["ns/op"]), 100*(paired-1), 100*over))
		if tg.overhead > 0 {
			want = append(want, fmt.Sprintf("overhead <= %g%%", 100*tg.overhead))
			met = append(met, paired-1 <= tg.overhead)
		}
	}
	if _, ok := u[extraUnit]; ok {
		var ex []string
		for _, lib := range t.libs {
			if v, ok := t.median[lib][extraUnit]; ok {
				ex = append(ex, fmt.Sprintf("%s %.3g", lib, v))
			}
		}
		parts = append(parts, "extra requests per call: "+strings.Join(ex, ", "))
	}
	if tg.speedup > 0 {
		want = append(want, fmt.Sprintf(">= %gx faster than the fastest peer", tg.speedup))
		met = append(met, speedup >= tg.speedup)
	}
	if tg.zeroAllocs {
		want = append(want, "0 allocs/op")
		met = append(met, u["allocs/op"] == 0)
	}

	line := "Reading (medians): " + strings.Join(parts, "; ") + "."
	if len(want) > 0 {
		verdict := "met"
		for _, m := range met {
			if !m {
				verdict = "MISSED"
			}
		}
		line += fmt.Sprintf(" Target (%s): %s.", strings.Join(want, ", "), verdict)
	}
	return line, nil
}

// fastestPeer returns the peer library with the lowest median ns/op.
func fastestPeer(t table) (string, bool) {
	best, found := "", false
	for _, lib := range t.libs {
		if !isPeer(lib) {
			continue
		}
		if !found || t.median[lib]["ns/op"] < t.median[best]["ns/op"] {
			best, found = lib, true
		}
	}
	return best, found
}

// times says how many times faster (or slower) unherd is, given the ratio
// of the peer's time to unherd's.
func times(r float64) string {
	if r >= 1 {
		return fmt.Sprintf("%.2fx faster", r)
	}
	return fmt.Sprintf("%.2fx slower", 1/r)
}

// duration formats a time in nanoseconds with three significant digits.
func duration(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.3g ns/op", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.3g µs/op", ns/1e3)
	default:
		return fmt.Sprintf("%.3g ms/op", ns/1e6)
	}
}
