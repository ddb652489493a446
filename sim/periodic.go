package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/periodic"
	"github.com/unherd/unherd/sim/internal/engine"
)

const (
	buildersJitter = `Brooker, "Timeouts, retries, and backoff with jitter", Amazon Builders' Library, 2019, https://aws.amazon.com/builders-library/timeouts-retries-and-backoff-with-jitter/`
	systemdTimer   = `systemd.timer(5), RandomizedDelaySec= and FixedRandomDelay=, https://www.freedesktop.org/software/systemd/man/latest/systemd.timer.html`
)

// periodicStrategies are the fleet's schedules, in table order: "cron" is
// every process on the minute (Align, no jitter); "deploy" starts each
// process's ticker when it starts, without jitter, the fleet deployed
// within --deploy; "window" is cron plus full jitter within --window;
// "full", "equal", "decorrelated" and "fixed" spread each tick over the
// whole interval (fixed draws one phase per process and keeps it).
var periodicStrategies = []string{"cron", "deploy", "window", "full", "equal", "decorrelated", "fixed"}

// periodicParams are the parameters of the periodic scenario.
type periodicParams struct {
	// Clients is the number of processes in the fleet, each running one
	// job, one request, per interval (--clients).
	Clients int `param:"clients" usage:"processes in the fleet, each running one job per interval" check:"positive,max=1000000"`
	// Interval is the jobs' period (--interval).
	Interval time.Duration `param:"interval" usage:"the jobs' period"`
	// Duration is how long each run lasts (--duration).
	Duration time.Duration `param:"duration" usage:"length of each run"`
	// Window is the spread of the "window" strategy (--window).
	Window time.Duration `param:"window" usage:"jitter window after each slot for the window strategy"`
	// Deploy is the span over which the fleet's processes start (--deploy):
	// uniformly in [0, Deploy].
	Deploy time.Duration `param:"deploy" usage:"span over which the fleet's processes start"`
	// Capacity is what the dependency serves per second; requests beyond
	// it in a second count as excess (--capacity).
	Capacity int `param:"capacity" usage:"requests per second the dependency serves" check:"positive"`
	// Runs is the number of runs per strategy (--runs).
	Runs int `param:"runs" usage:"runs per strategy" check:"positive,max=1000"`
}

func defaultPeriodicParams() *periodicParams {
	return &periodicParams{Clients: 10000, Interval: time.Minute, Duration: 10 * time.Minute,
		Window: 10 * time.Second, Deploy: 5 * time.Second, Capacity: 500, Runs: 5}
}

// Fields implements Params: the fields tagged param, in their order.
func (p *periodicParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags (checkFields),
// then the rules between fields.
func (p *periodicParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
	}
	switch {
	case p.Interval < time.Second:
		return invalid("interval", "%v is below the 1s resolution of the load count", p.Interval)
	case p.Duration < 2*p.Interval || p.Duration > 1000*p.Interval:
		return invalid("duration", "%v must be 2 to 1000 intervals (--interval %v)", p.Duration, p.Interval)
	case p.Window <= 0 || p.Window > p.Interval:
		return invalid("window", "%v must be above zero and at most --interval %v", p.Window, p.Interval)
	case p.Deploy < 0 || p.Deploy > p.Interval:
		return invalid("deploy", "%v must be in [0, --interval %v]", p.Deploy, p.Interval)
	}
	return nil
}

// Quick implements Params: 5 minutes, 2 runs per strategy.
func (p *periodicParams) Quick() { p.Duration, p.Runs = 5*p.Interval, 2 }

var periodicScenario = define("periodic", "open",
	"a fleet runs a job every minute against one dependency: the per-second load of cron-aligned ticks, tickers started by one deploy, and periodic.Schedule's jittered ticks (Builders' Library; systemd.timer)",
	defaultPeriodicParams, runPeriodicScenario)

// periodicOut is one run's measurement.
type periodicOut struct {
	perSecond []int32 // requests in each second of the run
	lag       time.Duration
	jobs      int64
}

func runPeriodicScenario(ctx context.Context, p *periodicParams, o Options) (*Result, error) {
	ns, nr := len(periodicStrategies), p.Runs
	outs, err := sweep(ctx, o, ns*nr, func(i int) periodicOut {
		return runPeriodic(ctx.Done(), o.Seed, uint64(i), p, periodicStrategies[i/nr])
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "periodic", Population: "open", Params: paramValues(p),
		Columns: []string{"strategy", "peak_rps", "p99_rps", "mean_rps", "excess_share", "mean_lag_s"}}
	stats := make([]periodicStats, ns)
	chart := Chart{Name: "periodic_load", Title: "Requests per second reaching the dependency (first run, first 3 intervals)",
		XLabel: "time (s)", YLabel: "requests per second, log scale", YScale: scaleLog,
		XStep: p.Interval.Seconds(), Lines: []Line{{Y: float64(p.Capacity), Label: fmt.Sprintf("capacity %d/s", p.Capacity)}}}
	for s, name := range periodicStrategies {
		st := summarise(outs[s*nr:(s+1)*nr], p.Capacity)
		stats[s] = st
		res.Rows = append(res.Rows, Row{"strategy": name, "peak_rps": st.peak, "p99_rps": st.p99,
			"mean_rps": st.mean, "excess_share": st.excess, "mean_lag_s": st.lag})
		first := outs[s*nr].perSecond
		n := min(len(first), int(3*p.Interval/time.Second))
		xs, ys := make([]float64, n), make([]float64, n)
		for t := range n {
			xs[t], ys[t] = float64(t), float64(first[t])
		}
		chart.Series = append(chart.Series, Series{Name: name, X: xs, Y: ys})
	}
	res.Charts = []Chart{chart}
	res.Claims = periodicClaims(p, stats)
	return res, nil
}

// periodicStats are one strategy's figures, averaged over its runs.
type periodicStats struct {
	peak, p99, mean, excess, lag float64
}

// summarise averages the runs' peak, 99th percentile and mean requests per
// second, the share of requests beyond capacity in their second, and the
// mean lag from a slot's start to its job.
func summarise(outs []periodicOut, capacity int) periodicStats {
	var st periodicStats
	for _, o := range outs {
		sorted := slices.Clone(o.perSecond)
		slices.Sort(sorted)
		var total, over int64
		for _, n := range o.perSecond {
			total += int64(n)
			over += int64(max(0, int(n)-capacity))
		}
		st.peak += float64(sorted[len(sorted)-1])
		st.p99 += float64(sorted[(len(sorted)-1)*99/100])
		st.mean += float64(total) / float64(len(sorted))
		st.excess += float64(over) / float64(max(total, 1))
		st.lag += o.lag.Seconds() / float64(max(o.jobs, 1))
	}
	n := float64(len(outs))
	return periodicStats{peak: round(st.peak/n, 1), p99: round(st.p99/n, 1), mean: round(st.mean/n, 2),
		excess: round(st.excess/n, 4), lag: round(st.lag/n, 2)}
}

func periodicClaims(p *periodicParams, st []periodicStats) []Claim {
	const cron, deploy, window, full = 0, 1, 2, 3
	n, iv, w, dep := float64(p.Clients), p.Interval.Seconds(), p.Window.Seconds(), p.Deploy.Seconds()
	worstMean, bestMean := st[0].mean, st[0].mean
	for _, s := range st {
		worstMean, bestMean = max(worstMean, s.mean), min(bestMean, s.mean)
	}
	return []Claim{
		newClaim(buildersJitter, "periodic work without jitter strikes together: every minute-aligned process runs in the same second",
			st[cron].peak == n, "cron: peak %.0f requests in one second of %.0f processes, excess share %.3f",
			st[cron].peak, n, st[cron].excess),
		newClaim(buildersJitter, "tickers started by one deploy stay together: without jitter the peak stays near clients/deploy span for the whole run",
			st[deploy].peak >= n/max(dep, 1)/2, "deploy over %.0f s: peak %.0f per second (clients/span = %.0f)",
			dep, st[deploy].peak, n/max(dep, 1)),
		newClaim(systemdTimer, "a random delay in [0, W] after each slot spreads the fleet to about clients/W per second, at a mean lag of W/2",
			st[window].peak <= 1.5*n/w && st[window].lag >= 0.4*w && st[window].lag <= 0.6*w,
			"window %.0f s: peak %.0f per second (clients/W = %.0f), mean lag %.1f s", w, st[window].peak, n/w, st[window].lag),
		newClaim(buildersJitter, "full jitter over the interval flattens the load: peak within 1.5x the mean rate, nothing beyond capacity when the mean fits",
			st[full].peak <= 1.5*st[full].mean && (n/iv > float64(p.Capacity) || st[full].excess == 0),
			"full: peak %.0f, mean %.1f per second, excess share %.3f", st[full].peak, st[full].mean, st[full].excess),
		newClaim("periodic package doc (slots anchored on the grid)", "jitter moves work within the interval and never drifts: every schedule runs the same jobs per second (within 2%)",
			worstMean <= 1.02*bestMean, "mean requests per second from %.2f to %.2f across the schedules", bestMean, worstMean),
	}
}

// runPeriodic simulates one run of the fleet under strategy: each process
// drives a periodic.Series, asking for its next tick when a tick fires,
// as periodic.Run does.
func runPeriodic(done <-chan struct{}, seed, stream uint64, p *periodicParams, strategy string) periodicOut {
	e := engine.New(seed, stream)
	e.StopOn(done)
	s := periodic.Schedule{Interval: p.Interval, Align: true}
	switch strategy {
	case "cron":
		s.Jitter = backoff.None
	case "deploy":
		s.Jitter, s.Align = backoff.None, false
	case "window":
		s.Spread = p.Window
	case "fixed":
		s.Fixed = true
	default:
		j, err := backoff.ParseJitter(strategy)
		if err != nil {
			return periodicOut{} // unreachable: periodicStrategies are all valid
		}
		s.Jitter = j
	}
	r := &periodicRun{p: p, perSecond: make([]int32, p.Duration/time.Second)}
	for c := range p.Clients {
		start := time.Duration(0)
		if strategy == "deploy" {
			start = time.Duration(e.Float64() * float64(p.Deploy))
		}
		q, err := periodic.NewSeries(s, epoch.Add(start))
		if err != nil {
			return periodicOut{} // unreachable: Validate bounds every field
		}
		r.series = append(r.series, q)
		e.At(q.Next(epoch.Add(start), e.Uint64()).Sub(epoch), 0, int32(c), 0)
	}
	e.Run(r, time.Duration(len(r.perSecond))*time.Second-1)
	return periodicOut{perSecond: r.perSecond, lag: r.lag, jobs: r.jobs}
}

// periodicRun is one run's state: each process's series and the load
// counted so far. Its only event is a process's tick.
type periodicRun struct {
	p         *periodicParams
	series    []*periodic.Series
	perSecond []int32
	lag       time.Duration
	jobs      int64
}

func (r *periodicRun) Handle(e *engine.Engine, ev engine.Event) {
	now := e.Elapsed()
	r.perSecond[now/time.Second]++
	r.jobs++
	r.lag += now % r.p.Interval // epoch is on the grid: the lag behind the slot's start
	next := r.series[ev.ID].Next(e.Now(), e.Uint64())
	e.At(next.Sub(epoch), 0, ev.ID, 0)
}
