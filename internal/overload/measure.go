package overload

import (
	"fmt"
	"slices"
	"time"
)

// Recovery is judged over a sliding window: goodput is back when the
// successes completed in recoveryWindow first reach recoveryShare of the
// offered load; the window starts every recoveryStep.
const (
	recoveryWindow = 250 * time.Millisecond
	recoveryShare  = 0.9
	recoveryStep   = 50 * time.Millisecond
)

// phaseResult is one phase of one run.
type phaseResult struct {
	phase                    phase
	offered, goodput         float64 // calls/s arrived; successes/s
	capacity                 float64
	p50, p99                 time.Duration // of successful calls, at the caller
	admittedP99              time.Duration // handler entry to the end of work, of completed work
	wasted                   float64       // share of work time for callers gone
	critical, criticalOK     int
	refused                  int // calls the harness did not start
	recovery                 time.Duration
	recovered, lastPhase     bool
	unloadedP99              time.Duration // admittedP99 of the first phase
	state                    string        // the protection's state at the phase's end
	workStarted, workForGone int
	lag                      time.Duration // p99 of how late calls started
	stretch                  float64       // completed work's time over its drawn service time
}

func (p phaseResult) criticalRate() float64 {
	if p.critical == 0 {
		return 0
	}
	return float64(p.criticalOK) / float64(p.critical)
}

func (p phaseResult) p99Ratio() float64 {
	if p.unloadedP99 == 0 {
		return 0
	}
	return float64(p.admittedP99) / float64(p.unloadedP99)
}

const tableHeader = "| protection | phase | offered | goodput / capacity | success p50 / p99 | admitted p99 / unloaded | work for callers gone | critical success | goodput back to 90% |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |"

func (p phaseResult) row(name string) string {
	rec := ""
	if p.lastPhase {
		rec = fmt.Sprintf("%.2f s", p.recovery.Seconds())
		if !p.recovered {
			rec = "not within the phase"
		}
	}
	refused := ""
	if p.refused > 0 {
		refused = fmt.Sprintf(" (%d refused by the harness)", p.refused)
	}
	return fmt.Sprintf("| %s | %s | %.0f/s (%.2fx)%s | %.2fx | %s / %s | %s (%.1fx) | %.0f%% | %.0f%% | %s |",
		name, p.phase.name, p.offered, p.offered/p.capacity, refused, p.goodput/p.capacity,
		ms(p.p50), ms(p.p99), ms(p.admittedP99), p.p99Ratio(), 100*p.wasted, 100*p.criticalRate(), rec)
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// measure computes each phase's figures from the calls and the work.
func measure(start time.Time, phaseLen time.Duration, capacity float64, calls []call, works []work) []phaseResult {
	res := make([]phaseResult, len(phases))
	for i, ph := range phases {
		from := start.Add(time.Duration(i) * phaseLen)
		to := from.Add(phaseLen)
		in := func(at time.Time) bool { return !at.Before(from) && at.Before(to) }
		p := phaseResult{phase: ph, capacity: capacity, lastPhase: i == len(phases)-1}
		var arrived int
		var lat []time.Duration
		var lags []time.Duration
		for _, c := range calls {
			if in(c.scheduled) {
				lags = append(lags, c.arrived.Sub(c.scheduled))
				arrived++
				if c.refused {
					p.refused++
				}
				if c.critical {
					p.critical++
					if c.ok {
						p.criticalOK++
					}
				}
			}
			if c.ok && in(c.done) {
				lat = append(lat, c.done.Sub(c.arrived))
			}
		}
		secs := phaseLen.Seconds()
		p.offered = float64(arrived) / secs
		p.goodput = float64(len(lat)) / secs
		p.p50, p.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
		p.lag = quantile(lags, 0.99)
		var admitted []time.Duration
		var all, gone, worked, drawn time.Duration
		for _, w := range works {
			if w.start.IsZero() {
				continue
			}
			if !w.cut && in(w.end) {
				admitted = append(admitted, w.end.Sub(w.arrived))
				worked += w.end.Sub(w.start)
				drawn += w.drawn
			}
			// The part of the work inside the phase.
			d := minTime(w.end, to).Sub(maxTime(w.start, from))
			if d <= 0 {
				continue
			}
			all += d
			p.workStarted++
			if w.gone {
				gone += d
				p.workForGone++
			}
		}
		p.admittedP99 = quantile(admitted, 0.99)
		if drawn > 0 {
			p.stretch = float64(worked) / float64(drawn)
		}
		if all > 0 {
			p.wasted = float64(gone) / float64(all)
		}
		p.unloadedP99 = res[0].admittedP99
		if i == 0 {
			p.unloadedP99 = p.admittedP99
		}
		if p.lastPhase {
			p.recovery, p.recovered = recoveryIn(from, to, ph.load*capacity, calls)
		}
		res[i] = p
	}
	return res
}

// recoveryIn returns how long after from the successes completed in a
// recoveryWindow first reached recoveryShare of rate per second; ok is
// false if they did not before to.
func recoveryIn(from, to time.Time, rate float64, calls []call) (time.Duration, bool) {
	var done []time.Time
	for _, c := range calls {
		if c.ok && !c.done.Before(from) && c.done.Before(to) {
			done = append(done, c.done)
		}
	}
	slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
	want := recoveryShare * rate * recoveryWindow.Seconds()
	for at := from; !at.Add(recoveryWindow).After(to); at = at.Add(recoveryStep) {
		lo, _ := slices.BinarySearchFunc(done, at, func(a, b time.Time) int { return a.Compare(b) })
		hi, _ := slices.BinarySearchFunc(done, at.Add(recoveryWindow), func(a, b time.Time) int { return a.Compare(b) })
		if float64(hi-lo) >= want {
			return at.Sub(from), true
		}
	}
	return 0, false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// quantile returns the q-quantile of ds (nearest rank), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
