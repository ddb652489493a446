package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
)

// brookerRateLimit names the source of the rate-limit figures. The figures
// (3000 workers; about 35% of the limit used without jitter, about 85%
// with full jitter; a job cut from hours to minutes) are attributed to
// Marc Brooker's AWS material on backoff and jitter, but the primary text
// could not be located to give its title, year and address: not in the
// 2015 Architecture Blog post "Exponential Backoff And Jitter" (whose
// experiment is the contention one of the jitter scenario), nor in the
// Builders' Library article "Timeouts, retries, and backoff with jitter",
// and searches of stored web pages, documentation, code and issue threads
// (for the figures 35% and 85%, "3000 workers", "hours to minutes",
// rate-limited APIs with jitter, re:Invent talks on backoff) found only
// restatements without a source. So the source says so rather than guess,
// and the model's parameters (limit, burst, base, cap, attempts, hop) are
// this scenario's own, not the source's.
const brookerRateLimit = `Brooker's AWS material on backoff and jitter, as commonly cited (3000 workers behind a rate-limited API; primary talk or article not located, so its title, year and address are unverified); method as in Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015, https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/`

func init() { register(ratelimitScenario{}) }

// errTooMany is the rate limiter's answer, an HTTP 429: a throttling
// error, which the retry policy backs off from its throttled base.
var errTooMany = retry.MarkThrottled(errors.New("sim: 429 too many requests"))

// RatelimitParams are the parameters of the ratelimit scenario.
type RatelimitParams struct {
	// Workers is the number of workers (--clients: --workers is the
	// command line's own); each has Jobs requests to get through, one
	// after another (--jobs).
	Workers, Jobs int
	// LongJobs is the requests per worker of the long workload, for the
	// claim that jitter cuts a job from hours to minutes (--long-jobs; 0
	// skips it). By default 500: 25 minutes at the limit, so that the
	// source's own utilisations, 35% and 85%, would take 71 and 29
	// minutes, hours and minutes.
	LongJobs int
	// Limit is the API's rate limit in requests per second and Burst the
	// seconds of it the limiter lets through at once (--limit, --burst).
	Limit float64
	Burst time.Duration
	// Base, Cap and Attempts shape the workers' retry policy (--base,
	// --cap, --attempts). A call that runs out of attempts is started
	// again: the job still has to be done.
	Base, Cap time.Duration
	Attempts  int
	// Hop is the mean one-way network delay (--hop).
	Hop time.Duration
}

func defaultRatelimitParams() *RatelimitParams {
	return &RatelimitParams{Workers: 3000, Jobs: 10, LongJobs: 500, Limit: 1000, Burst: 100 * time.Millisecond,
		Base: 100 * time.Millisecond, Cap: 10 * time.Second, Attempts: 10, Hop: 10 * time.Millisecond}
}

// Register implements Params.
func (p *RatelimitParams) Register(fs *flag.FlagSet) {
	fs.IntVar(&p.Workers, "clients", p.Workers, "number of simulated workers (clients) consuming the API, each with --jobs requests; not --workers, which sets the goroutines running the simulation")
	fs.IntVar(&p.Jobs, "jobs", p.Jobs, "requests each worker must get through")
	fs.IntVar(&p.LongJobs, "long-jobs", p.LongJobs, "requests per worker of the long workload (minutes at the limit); 0 skips it")
	fs.Float64Var(&p.Limit, "limit", p.Limit, "the API's rate limit, requests per second")
	fs.DurationVar(&p.Burst, "burst", p.Burst, "how much of the limit passes at once, in time")
	fs.DurationVar(&p.Base, "base", p.Base, "backoff base (after a 429)")
	fs.DurationVar(&p.Cap, "cap", p.Cap, "backoff cap")
	fs.IntVar(&p.Attempts, "attempts", p.Attempts, "attempts per call, counting the first")
	fs.DurationVar(&p.Hop, "hop", p.Hop, "mean one-way network delay")
}

// Validate implements Params.
func (p *RatelimitParams) Validate() error {
	for _, err := range []error{
		checkPositive("clients", p.Workers), checkAtMost("clients", p.Workers, 1000000),
		checkPositive("jobs", p.Jobs), checkPositive("limit", p.Limit), checkPositive("burst", p.Burst),
		checkAtMost("long-jobs", p.LongJobs, 100000),
		checkPositive("base", p.Base), checkPositive("cap", p.Cap), checkPositive("attempts", p.Attempts),
		checkPositive("hop", p.Hop),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case p.Base > p.Cap:
		return invalid("base", "%v is above --cap %v", p.Base, p.Cap)
	case p.LongJobs < 0:
		return invalid("long-jobs", "%d is negative", p.LongJobs)
	case float64(p.Workers)*float64(max(p.Jobs, p.LongJobs)) > 1e7:
		return invalid("jobs", "--clients times --jobs (or --long-jobs) is more than 10000000 requests")
	case float64(p.Workers)*float64(max(p.Jobs, p.LongJobs))/p.Limit > 3600:
		return invalid("limit", "the work would take more than an hour at --limit %v", p.Limit)
	}
	return nil
}

// Values implements Params.
func (p *RatelimitParams) Values() map[string]any {
	return map[string]any{"clients": p.Workers, "jobs": p.Jobs, "long-jobs": p.LongJobs, "limit": p.Limit, "burst": p.Burst.String(),
		"base": p.Base.String(), "cap": p.Cap.String(), "attempts": p.Attempts, "hop": p.Hop.String()}
}

// Quick implements Params. It changes nothing: the published setup runs
// in a fraction of a second and the long workload in a few, and fewer
// requests per worker would change the shape (the start, when all workers
// collide at once, would weigh more) or no longer test the claim.
func (p *RatelimitParams) Quick() {}

var ratelimitStrategies = []string{"exponential", "full jitter"}

type ratelimitScenario struct{}

func (ratelimitScenario) Name() string { return "ratelimit" }
func (ratelimitScenario) Describe() string {
	return "N workers (--clients, 3000 by default) share an API whose rate limit answers 429: utilisation of the limit and completion time with exponential backoff without jitter and with full jitter, on the published 10 requests per worker and on a long job of --long-jobs"
}
func (ratelimitScenario) Population() string { return "closed" }
func (ratelimitScenario) Params() Params     { return defaultRatelimitParams() }

type ratelimitOut struct {
	attempts, throttled int64
	done                time.Duration
	good                []int64 // successes per second
	err                 error
}

func (ratelimitScenario) Run(ctx context.Context, ps Params, o Options) (*Result, error) {
	p, ok := ps.(*RatelimitParams)
	if !ok {
		return nil, fmt.Errorf("%w: ratelimit got %T", ErrInvalidParams, ps)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// Runs: both strategies on the published workload; then on it again
	// with half and with twice the limiter's burst (the un-jittered
	// figure depends on it, and the source does not give one); then
	// (unless LongJobs is 0) on the long workload.
	workloads := []rlWorkload{{p.Jobs, p.Burst, ""}, {p.Jobs, p.Burst / 2, "half the burst"}, {p.Jobs, 2 * p.Burst, "twice the burst"}}
	if p.LongJobs > 0 {
		workloads = append(workloads, rlWorkload{p.LongJobs, p.Burst, ""})
	}
	ns := len(ratelimitStrategies)
	outs, err := sweep(ctx, o, ns*len(workloads), func(i int) ratelimitOut {
		j := backoff.None
		if i%ns == 1 {
			j = backoff.Full
		}
		q := *p
		q.Burst = workloads[i/ns].burst
		return runRatelimit(ctx.Done(), o.Seed, uint64(i), &q, j, workloads[i/ns].jobs)
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "ratelimit", Population: "closed", Params: p.Values(),
		Columns: []string{"workload", "strategy", "utilisation_pct", "completion_s", "ideal_s", "attempts_per_job", "throttled_pct"}}
	util := make([]float64, len(outs))
	done := make([]float64, len(outs)) // seconds
	chart := Chart{Name: "ratelimit_goodput", Title: "Useful requests per second against the limit",
		XLabel: "time (s)", YLabel: "successful requests per second"}
	for i, out := range outs {
		if out.err != nil {
			return nil, out.err
		}
		w := workloads[i/ns]
		jobs := float64(p.Workers) * float64(w.jobs)
		done[i] = out.done.Seconds()
		util[i] = jobs / (p.Limit * done[i])
		name := fmt.Sprintf("%d x %d", p.Workers, w.jobs)
		if w.label != "" {
			name += fmt.Sprintf(", burst %v (%s)", w.burst, w.label)
		}
		res.Rows = append(res.Rows, Row{"workload": name,
			"strategy":        ratelimitStrategies[i%ns],
			"utilisation_pct": round(100*util[i], 1), "completion_s": round(done[i], 1),
			"ideal_s": round(jobs/p.Limit, 1), "attempts_per_job": round(float64(out.attempts)/jobs, 2),
			"throttled_pct": round(100*float64(out.throttled)/float64(out.attempts), 1)})
		if i >= ns {
			continue // the chart shows the published workload
		}
		s := Series{Name: ratelimitStrategies[i]}
		for b, n := range out.good {
			s.X = append(s.X, float64(b))
			s.Y = append(s.Y, float64(n))
		}
		chart.Series = append(chart.Series, s)
	}
	res.Charts = []Chart{chart}
	res.Claims = ratelimitClaims(p, util, done)
	return res, nil
}

// rlWorkload is one workload of the ratelimit scenario: requests per
// worker and the limiter's burst; label names a burst changed from the
// published one.
type rlWorkload struct {
	jobs  int
	burst time.Duration
	label string
}

// ratelimitClaims checks the claims against the utilisations and
// completion times (seconds) of the runs, laid out as Run lays them out:
// without jitter then with full jitter, for the published workload, the
// same with half and with twice the burst, and the long workload if any.
func ratelimitClaims(p *RatelimitParams, util, done []float64) []Claim {
	const none, full = 0, 1
	const half, twice, long = 2, 4, 6 // the first run of each workload
	ideal := float64(p.Workers) * float64(p.Jobs) / p.Limit
	claims := []Claim{
		claim(brookerRateLimit, "without jitter the workers use about 35% of the limit (30% to 40%)",
			util[none] >= 0.30 && util[none] <= 0.40,
			fmt.Sprintf("%%.0f%%%% (finished in %%.1f s; ideal %%.1f s) with this limiter's %v burst; the figure depends on the burst, which the source does not give: %%.0f%%%% with half of it, %%.0f%%%% with twice", p.Burst),
			100*util[none], done[none], ideal, 100*util[half+none], 100*util[twice+none]),
		claim(brookerRateLimit, "with full jitter they use about 85% of it (80% to 90%)",
			util[full] >= 0.80 && util[full] <= 0.90,
			"%.0f%% (finished in %.1f s); %.0f%% with half the burst, %.0f%% with twice",
			100*util[full], done[full], 100*util[half+full], 100*util[twice+full]),
		claim(brookerRateLimit, "full jitter gets the same work done sooner",
			done[full] < done[none], "%.1f s with full jitter vs %.1f s without", done[full], done[none]),
	}
	if len(util) > long {
		longIdeal := float64(p.Workers) * float64(p.LongJobs) / p.Limit
		claims = append(claims, claim(brookerRateLimit,
			"on a long job jitter turns hours into minutes: without jitter the work takes at least an hour, with full jitter minutes, within 20% of the time at the limit",
			done[long+none] >= 3600 && done[long+full] <= 1.2*longIdeal,
			fmt.Sprintf("%d requests per worker (%.0f min at the limit; 35%%%% and 85%%%% of it would take %.0f and %.0f min): ",
				p.LongJobs, longIdeal/60, longIdeal/0.35/60, longIdeal/0.85/60)+
				"%.1f min without jitter (%.0f%% of the limit), %.1f min with full jitter (%.0f%%); without jitter the work ends only %.1f s later "+
				"(%.1f s on the short job): the workers that get through keep the limit busy while the others back off, so the lag does not grow with the job",
			done[long+none]/60, 100*util[long+none], done[long+full]/60, 100*util[long+full],
			done[long+none]-done[long+full], done[none]-done[full]))
	}
	return claims
}

// rlArrive is the ratelimit model's one event: worker id's attempt
// reaches the limiter. An attempt's send and its answer's arrival are not
// events of their own: nothing but the worker observes them (its policy
// has no guards and an unlimited budget, and reads no clock), so the
// answer is handled at the limiter's decision, with the time it arrives
// (one hop later), and the worker's next attempt is scheduled from there.
// That is the same model in a third of the events.
const rlArrive int32 = 0

type rlWorker struct {
	jobs int        // left to do
	call retry.Call // the job's retry state
}

type ratelimitRun struct {
	p       *RatelimitParams
	policy  *retry.Policy
	workers []rlWorker
	limit   tokenBucket // the API's rate limiter: Limit per second, Burst's worth (at least one token)
	left    int         // workers not finished
	out     ratelimitOut
}

func runRatelimit(done <-chan struct{}, seed, stream uint64, p *RatelimitParams, j backoff.Jitter, jobs int) ratelimitOut {
	e := newEngine(seed, stream)
	e.done = done
	pol, err := retry.New(retry.Config{MaxAttempts: p.Attempts, Budget: budget.Unlimited,
		Backoff: backoff.Schedule{Base: p.Base, ThrottledBase: p.Base, Cap: p.Cap, Jitter: j}})
	if err != nil {
		return ratelimitOut{err: fmt.Errorf("%w: %w", ErrInvalidParams, err)}
	}
	r := &ratelimitRun{p: p, policy: pol, workers: make([]rlWorker, p.Workers), left: p.Workers,
		limit: tokenBucket{rate: p.Limit, burst: max(p.Limit*p.Burst.Seconds(), 1), tokens: p.Limit * p.Burst.Seconds()}}
	for w := range r.workers {
		r.workers[w] = rlWorker{jobs: jobs, call: pol.Begin(false)}
		r.send(e, int32(w), 0)
	}
	e.run(r, -1)
	return r.out
}

func (r *ratelimitRun) hop(e *engine) time.Duration { return e.normal(r.p.Hop, r.p.Hop/5) }

// send makes worker id's next attempt, sent after wait: it reaches the
// limiter one hop later.
func (r *ratelimitRun) send(e *engine, id int32, wait time.Duration) {
	_ = r.workers[id].call.Admit(context.Background()) // no guards: never rejects
	r.out.attempts++
	e.after(wait+r.hop(e), rlArrive, id, 0)
}

func (r *ratelimitRun) handle(e *engine, ev event) {
	w := &r.workers[ev.id]
	ok := r.limit.take(e.elapsed())
	back := r.hop(e) // the answer's way back
	at := e.elapsed() + back
	if ok {
		s := int(at / time.Second)
		for len(r.out.good) <= s {
			r.out.good = append(r.out.good, 0)
		}
		r.out.good[s]++
		w.call.Done(e.Now().Add(back), time.Time{}, nil, 0)
		w.jobs--
		w.call = r.policy.Begin(false)
		if w.jobs == 0 {
			r.left--
			r.out.done = max(r.out.done, at)
			return
		}
		r.send(e, ev.id, back)
		return
	}
	r.out.throttled++
	d := w.call.Done(e.Now().Add(back), time.Time{}, errTooMany, e.u64())
	if d.Reason != nil {
		// Out of attempts: the job is still to do; start it over (after
		// the wait the policy asks for before it returns, if any).
		var wait time.Duration
		if d.Wait {
			wait = d.Delay
		}
		w.call = r.policy.Begin(false)
		r.send(e, ev.id, back+wait)
		return
	}
	r.send(e, ev.id, back+d.Delay)
}
