package main

import (
	"fmt"
	"slices"
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

// target is what a scenario must show in one run. Ratios and differences
// are taken round by round (the k-th run of one case with the k-th run of
// another, which ran in the same round) and judged on their median. A zero
// field sets no target.
type target struct {
	speedup     float64 // the peer at least this many times unherd's time
	peer        string  // the peer the speedup is judged against; empty means the fastest
	zeroAllocs  bool    // unherd allocates nothing
	maxAllocs   float64 // unherd at most this many allocs/op (with limitAllocs)
	limitAllocs bool
	maxNs       float64 // unherd at most this many ns/op
	overhead    float64 // unherd at most this fraction slower than the bare transport

	floor       string  // the floor case the next three compare with
	floorRatio  float64 // unherd at most this many times the floor's time
	floorOver   float64 // unherd at most this many ns/op above the floor
	floorAllocs bool    // unherd allocates no more than the floor
}

var targets = map[string]target{
	"FirstSuccess":   {speedup: 10, zeroAllocs: true},
	"RetryWait":      {floor: "floor-timer", floorRatio: 1.2, maxAllocs: 1, limitAllocs: true},
	"BudgetParallel": {speedup: 3, peer: "failsafe-go", maxNs: 20, zeroAllocs: true},
	"Pipeline":       {floor: "floor-timeout", floorOver: 50, floorAllocs: true},
	// The twins whose operation watches its context are held to the same
	// targets: there every attempt context does the same work.
	"PipelineWatched":         {floor: "floor-timeout", floorOver: 50, floorAllocs: true},
	"HedgePrimaryWins":        {maxNs: 150, maxAllocs: 1, limitAllocs: true},
	"HedgePrimaryWinsWatched": {maxNs: 150, maxAllocs: 1, limitAllocs: true},
	"HTTPGet":                 {overhead: 0.03},
	"HTTPGetParallel":         {overhead: 0.03},
	// The target is against failsafe-go's adaptive limiter, the peer of
	// unherd's default (Gradient); failsafe-go's bulkhead is the peer of
	// unherd-fixed and reads no clock.
	"Limit":         {speedup: 3, peer: "failsafe-go", zeroAllocs: true},
	"LimitParallel": {speedup: 3, peer: "failsafe-go", zeroAllocs: true},
	// Full jitter against cenkalti/backoff's widest randomization: one
	// draw from math/rand/v2's global source in each.
	"JitterDelay": {speedup: 1, peer: "cenkalti-backoff", zeroAllocs: true},
}

// unequal names the scenarios that are floors rather than comparisons of
// equal work: their readings say so and state no ratio as a result.
var unequal = map[string]string{
	"Retry2": "a floor, not equal work: unherd's immediate schedule arms no timer, every peer arms one",
}

// isPeer tells whether a case is another library's. Cases named
// unherd-* are unherd with other settings (the limit benchmarks'
// unherd-aimd, unherd-fixed): neither peers nor the case judged.
func isPeer(lib string) bool {
	return lib != unherd && lib != bare && !strings.HasPrefix(lib, floor) && !strings.HasPrefix(lib, unherd+"-")
}

// reading is the one-line summary of a scenario's runs.
func reading(t table, scenario string) (string, error) {
	u, ok := t.median[unherd]
	if !ok {
		return "", fmt.Errorf("scenario %s: no %s case", scenario, unherd)
	}
	tg := targets[scenario]
	var parts, want []string
	var met []bool
	check := func(what string, ok bool) {
		want = append(want, what)
		met = append(met, ok)
	}
	parts = append(parts, fmt.Sprintf("unherd %s, %g allocs/op", duration(u["ns/op"]), u["allocs/op"]))

	peer, ok := fastestPeer(t)
	label := "fastest peer"
	if tg.peer != "" {
		_, ok = t.median[tg.peer]
		peer, label = tg.peer, "peer"
	}
	if ok {
		p := t.median[peer]
		r, ok := t.paired(peer, unherd, "ns/op", ratio)
		how := "as the median of the per-round ratios (" + r.format("x", 2) + ")"
		if !ok {
			r = spread{median: p["ns/op"] / u["ns/op"]}
			how = "as the ratio of the medians"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s, %g allocs/op: unherd is %s %s",
			label, peer, duration(p["ns/op"]), p["allocs/op"], times(r.median), how))
		judged := "the fastest peer"
		if tg.peer != "" {
			judged = tg.peer
		}
		if tg.speedup > 0 {
			if tg.speedup == 1 {
				check("faster than "+judged, r.median > 1)
			} else {
				check(fmt.Sprintf(">= %gx faster than %s", tg.speedup, judged), r.median >= tg.speedup)
			}
		}
	} else if tg.peer != "" {
		return "", fmt.Errorf("scenario %s: no %s case", scenario, tg.peer)
	} else {
		parts = append(parts, "no peer case")
	}

	if tg.floor != "" {
		f, ok := t.median[tg.floor]
		if !ok {
			return "", fmt.Errorf("scenario %s: no %s case", scenario, tg.floor)
		}
		r, _ := t.paired(unherd, tg.floor, "ns/op", ratio)
		d, _ := t.paired(unherd, tg.floor, "ns/op", diff)
		parts = append(parts, fmt.Sprintf("%s %s, %g allocs/op: unherd/%s %.2f per round (%s), unherd - %s %+.0f ns per round (%s)",
			tg.floor, duration(f["ns/op"]), f["allocs/op"], tg.floor, r.median, r.format("", 2), tg.floor, d.median, d.format(" ns", 0)))
		if tg.floorRatio > 0 {
			check(fmt.Sprintf("<= %gx %s", tg.floorRatio, tg.floor), r.median <= tg.floorRatio)
		}
		if tg.floorOver > 0 {
			check(fmt.Sprintf("<= %g ns above %s", tg.floorOver, tg.floor), d.median <= tg.floorOver)
		}
		if tg.floorAllocs {
			check(fmt.Sprintf("allocs/op <= %s's", tg.floor), u["allocs/op"] <= f["allocs/op"])
		}
	}

	if b, ok := t.median[bare]; ok {
		// The overhead is judged on the median of the per-round ratios,
		// which cancels load that changes between rounds; the ratio of the
		// medians is shown too.
		over := u["ns/op"]/b["ns/op"] - 1
		r, ok := t.paired(unherd, bare, "ns/op", ratio)
		if !ok {
			r = spread{over + 1, over + 1, over + 1}
		}
		parts = append(parts, fmt.Sprintf("bare transport %s: unherd overhead %+.1f%% as the median of the per-round ratios (range %+.1f%% to %+.1f%%; %+.1f%% as the ratio of the medians)",
			duration(b["ns/op"]), 100*(r.median-1), 100*(r.min-1), 100*(r.max-1), 100*over))
		if tg.overhead > 0 {
			check(fmt.Sprintf("overhead <= %g%%", 100*tg.overhead), r.median-1 <= tg.overhead)
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
	if tg.maxNs > 0 {
		check(fmt.Sprintf("<= %g ns/op", tg.maxNs), u["ns/op"] <= tg.maxNs)
	}
	if tg.zeroAllocs {
		check("0 allocs/op", u["allocs/op"] == 0)
	}
	if tg.limitAllocs {
		check(fmt.Sprintf("<= %g allocs/op", tg.maxAllocs), u["allocs/op"] <= tg.maxAllocs)
	}

	line := "Reading (medians"
	if n := len(t.runs[unherd]["ns/op"]); n > 0 {
		line += fmt.Sprintf(" of %d rounds", n)
	}
	line += "): " + strings.Join(parts, "; ") + "."
	if why, ok := unequal[scenario]; ok {
		line = "Floor (" + why + "). " + line
	}
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

// spread is the median of per-round values and their range.
type spread struct{ median, min, max float64 }

func spreadOf(vs []float64) spread {
	return spread{median(vs), slices.Min(vs), slices.Max(vs)}
}

// format gives the range with unit after each bound and prec decimals.
func (s spread) format(unit string, prec int) string {
	return fmt.Sprintf("range %.*f%s to %.*f%s", prec, s.min, unit, prec, s.max, unit)
}

func ratio(a, b float64) float64 { return a / b }
func diff(a, b float64) float64  { return a - b }

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

// median is the middle value of vs, or the mean of the middle two; 0 for
// none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
