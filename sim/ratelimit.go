package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	retryengine "github.com/unherd/unherd/retry/engine"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
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

// errTooMany is the rate limiter's answer, an HTTP 429: a throttling
// error, which the retry policy backs off from its throttled base.
var errTooMany = retry.Judge(errors.New("sim: 429 too many requests"), retry.Verdict{Class: failure.Throttled})

// ratelimitParams are the parameters of the ratelimit scenario.
type ratelimitParams struct {
	// Workers is the number of workers (--clients: --workers is the
	// command line's own); each has Jobs requests to get through, one
	// after another (--jobs).
	Workers int `param:"clients" usage:"number of simulated workers (clients) consuming the API, each with --jobs requests; not --workers, which sets the goroutines running the simulation" check:"positive,max=1000000"`
	Jobs    int `param:"jobs" usage:"requests each worker must get through" check:"positive"`
	// LongLimit is the rate limit, in requests per second, of the long
	// workload, for the claim that jitter cuts a job from hours to
	// minutes (--long-limit; 0 skips it): the same workers and requests
	// against a limit tight enough that the work takes minutes at the
	// limit. By default 20: 3000 x 10 requests take 25 minutes at it, so
	// that the source's own utilisations, 35% and 85%, would take 71 and
	// 29 minutes, hours and minutes.
	LongLimit float64 `param:"long-limit" usage:"rate limit of the long workload, requests per second: the same work against a tighter limit, minutes of it at the limit; 0 skips it"`
	// Limit is the API's rate limit in requests per second and Burst the
	// seconds of it the limiter lets through at once (--limit, --burst).
	Limit float64       `param:"limit" usage:"the API's rate limit, requests per second" check:"positive"`
	Burst time.Duration `param:"burst" usage:"how much of the limit passes at once, in time" check:"positive"`
	// Base, Cap and Attempts shape the workers' retry policy (--base,
	// --cap, --attempts). A call that runs out of attempts is started
	// again: the job still has to be done.
	Base     time.Duration `param:"base" usage:"backoff base (after a 429)" check:"positive"`
	Cap      time.Duration `param:"cap" usage:"backoff cap" check:"positive"`
	Attempts int           `param:"attempts" usage:"attempts per call, counting the first" check:"positive"`
	// Hop is the mean one-way network delay (--hop).
	Hop time.Duration `param:"hop" usage:"mean one-way network delay" check:"positive"`
}

func defaultRatelimitParams() *ratelimitParams {
	return &ratelimitParams{Workers: 3000, Jobs: 10, LongLimit: 20, Limit: 1000, Burst: 100 * time.Millisecond,
		Base: 100 * time.Millisecond, Cap: 10 * time.Second, Attempts: 10, Hop: 10 * time.Millisecond}
}

// Fields implements Params: the fields tagged param, in their order.
func (p *ratelimitParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags (checkFields),
// then the rules between fields.
func (p *ratelimitParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
	}
	work := float64(p.Workers) * float64(p.Jobs)
	switch {
	case p.Base > p.Cap:
		return invalid("base", "%v is above --cap %v", p.Base, p.Cap)
	case math.IsInf(p.Limit, 1):
		return invalid("limit", "%v is not a rate", p.Limit)
	case !(p.LongLimit >= 0) || math.IsInf(p.LongLimit, 1):
		return invalid("long-limit", "%v must be 0 (none) or a positive rate", p.LongLimit)
	case work > 1e7:
		return invalid("jobs", "--clients times --jobs is more than 10000000 requests")
	case work/p.Limit > 3600:
		return invalid("limit", "the work would take more than an hour at --limit %v", p.Limit)
	case p.LongLimit > 0 && work/p.LongLimit > 3600:
		return invalid("long-limit", "the work would take more than an hour at --long-limit %v", p.LongLimit)
	}
	return nil
}

// Quick implements Params. It changes nothing: the published setup runs
// in a fraction of a second and the long workload in about half a second
// a seed, and fewer requests per worker would change the shape (the
// start, when all workers collide at once, would weigh more) or no
// longer test the claim.
func (p *ratelimitParams) Quick() {}

var ratelimitStrategies = []string{"exponential", "full jitter"}

var ratelimitScenario = define("ratelimit", "closed",
	"N workers (--clients, 3000 by default) share an API whose rate limit answers 429: utilisation of the limit and completion time with exponential backoff without jitter and with full jitter, for the published 10 requests per worker, and for the same work against a limit tight enough (--long-limit) that it takes minutes at the limit",
	defaultRatelimitParams, runRatelimitScenario)

type ratelimitOut struct {
	attempts, throttled int64
	done                time.Duration
	good                []int64 // successes per second
	err                 error
}

func runRatelimitScenario(ctx context.Context, p *ratelimitParams, o Options) (*Result, error) {
	// Runs: both strategies on the published workload; then on it again
	// with half and with twice the limiter's burst (the un-jittered
	// figure depends on it, and the source does not give one); then
	// (unless LongLimit is 0) against the long workload's limit.
	workloads := []rlWorkload{{p.Limit, p.Burst, ""}, {p.Limit, p.Burst / 2, "half the burst"}, {p.Limit, 2 * p.Burst, "twice the burst"}}
	if p.LongLimit > 0 {
		workloads = append(workloads, rlWorkload{p.LongLimit, p.Burst, "long"})
	}
	ns := len(ratelimitStrategies)
	outs, err := sweep(ctx, o, ns*len(workloads), func(i int) ratelimitOut {
		j := backoff.None
		if i%ns == 1 {
			j = backoff.Full
		}
		q := *p
		q.Limit, q.Burst = workloads[i/ns].limit, workloads[i/ns].burst
		return runRatelimit(ctx.Done(), o.Seed, uint64(i), &q, j)
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "ratelimit", Population: "closed", Params: paramValues(p),
		Columns: []string{"workload", "strategy", "utilisation_pct", "completion_s", "ideal_s", "attempts_per_job", "throttled_pct"}}
	util := make([]float64, len(outs))
	done := make([]float64, len(outs)) // seconds
	chart := Chart{Name: "ratelimit_goodput", Title: "Useful requests per second against the limit",
		XLabel: "time (s)", YLabel: "successful requests per second",
		Lines: []Line{{Y: p.Limit, Label: fmt.Sprintf("rate limit %v/s", p.Limit)}}}
	var long *Chart
	if p.LongLimit > 0 {
		long = &Chart{Name: "ratelimit_long_goodput", Title: fmt.Sprintf("Useful requests per second against a limit of %v/s (long workload)", p.LongLimit),
			XLabel: "time (min)", YLabel: "successful requests per second, mean over each minute",
			Lines: []Line{{Y: p.LongLimit, Label: fmt.Sprintf("rate limit %v/s", p.LongLimit)}}}
	}
	for i, out := range outs {
		if out.err != nil {
			return nil, out.err
		}
		w := workloads[i/ns]
		jobs := float64(p.Workers) * float64(p.Jobs)
		done[i] = out.done.Seconds()
		util[i] = jobs / (w.limit * done[i])
		name := fmt.Sprintf("%d x %d", p.Workers, p.Jobs)
		switch {
		case w.limit != p.Limit:
			name += fmt.Sprintf(", limit %v/s (%s)", w.limit, w.label)
		case w.label != "":
			name += fmt.Sprintf(", burst %v (%s)", w.burst, w.label)
		}
		res.Rows = append(res.Rows, Row{"workload": name,
			"strategy":        ratelimitStrategies[i%ns],
			"utilisation_pct": round(100*util[i], 1), "completion_s": round(done[i], 1),
			"ideal_s": round(jobs/w.limit, 1), "attempts_per_job": round(float64(out.attempts)/jobs, 2),
			"throttled_pct": round(100*float64(out.throttled)/float64(out.attempts), 1)})
		switch {
		case i < ns: // the published workload, second by second
			chart.Series = append(chart.Series, goodput(ratelimitStrategies[i], out.good, 1))
		case long != nil && i/ns == len(workloads)-1:
			long.Series = append(long.Series, goodput(ratelimitStrategies[i%ns], out.good, 60))
		}
	}
	res.Charts = []Chart{chart}
	if long != nil {
		res.Charts = append(res.Charts, *long)
	}
	res.Claims = ratelimitClaims(p, util, done)
	return res, nil
}

// goodput is a run's successes per second, as the mean of each span of
// width seconds, at the span's start (in seconds for width 1, in minutes
// for width 60).
func goodput(name string, good []int64, width int) Series {
	s := Series{Name: name}
	for b := 0; b < len(good); b += width {
		var n int64
		for _, g := range good[b:min(b+width, len(good))] {
			n += g
		}
		s.X = append(s.X, float64(b/width))
		s.Y = append(s.Y, float64(n)/float64(width))
	}
	return s
}

// rlWorkload is one workload of the ratelimit scenario: the limiter's
// rate and burst; label names what changed from the published one.
type rlWorkload struct {
	limit float64
	burst time.Duration
	label string
}

// ratelimitClaims checks the claims against the utilisations and
// completion times (seconds) of the runs, laid out as Run lays them out:
// without jitter then with full jitter, for the published workload, the
// same with half and with twice the burst, and the long workload if any.
//
// The source gives its utilisations as round figures, about 35% and
// about 85%: a run agrees when it rounds to the same multiple of 5, that
// is within 2.5 points of it.
func ratelimitClaims(p *ratelimitParams, util, done []float64) []Claim {
	const none, full = 0, 1
	const half, twice, long = 2, 4, 6 // the first run of each workload
	const band = 0.025
	work := float64(p.Workers) * float64(p.Jobs)
	ideal := work / p.Limit
	claims := []Claim{
		newClaim(brookerRateLimit, "without jitter the workers use about 35% of the limit (32.5% to 37.5%)",
			util[none] >= 0.35-band && util[none] <= 0.35+band,
			fmt.Sprintf("%%.1f%%%% (finished in %%.1f s; ideal %%.1f s) with this limiter's %v burst; the figure depends on the burst, which the source does not give: %%.0f%%%% with half of it, %%.0f%%%% with twice", p.Burst),
			100*util[none], done[none], ideal, 100*util[half+none], 100*util[twice+none]),
		newClaim(brookerRateLimit, "with full jitter they use about 85% of it (82.5% to 87.5%)",
			util[full] >= 0.85-band && util[full] <= 0.85+band,
			"%.1f%% (finished in %.1f s); %.0f%% with half the burst, %.0f%% with twice",
			100*util[full], done[full], 100*util[half+full], 100*util[twice+full]),
		newClaim(brookerRateLimit, "full jitter gets the same work done sooner",
			done[full] < done[none], "%.1f s with full jitter vs %.1f s without", done[full], done[none]),
	}
	if len(util) > long {
		longIdeal := work / p.LongLimit
		claims = append(claims, newClaim(brookerRateLimit,
			"on a job sized for it jitter turns hours into minutes: without jitter the work takes at least an hour, with full jitter minutes, within 20% of the time at the limit",
			done[long+none] >= 3600 && done[long+full] <= 1.2*longIdeal,
			fmt.Sprintf("the same %d x %d requests against a limit of %v/s (%.0f min at the limit; 35%%%% and 85%%%% of it would take %.0f and %.0f min): ",
				p.Workers, p.Jobs, p.LongLimit, longIdeal/60, longIdeal/0.35/60, longIdeal/0.85/60)+
				"%.1f min without jitter (%.0f%% of the limit), %.1f min with full jitter (%.0f%%): jitter cuts the time %.1fx",
			done[long+none]/60, 100*util[long+none], done[long+full]/60, 100*util[long+full], done[long+none]/done[long+full]))
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
//
// The answer's way back and the next attempt's way out are drawn as one
// round trip: the sum of two independent |Normal(Hop, Hop/5)| hops is
// Normal(2 Hop, √2 Hop/5) (a hop below zero is five deviations away), so
// the next attempt reaches the limiter at the same instants in
// distribution, for one draw instead of two. The answer is taken to
// arrive halfway through the round trip; only the goodput chart and the
// completion time read that instant.
const rlArrive int32 = 0

type rlWorker struct {
	jobs int              // left to do
	call retryengine.Call // the job's retry state
}

type ratelimitRun struct {
	p       *ratelimitParams
	policy  *retry.Policy
	workers []rlWorker
	limit   tokenBucket   // the API's rate limiter: Limit per second, Burst's worth (at least one token)
	tripSD  time.Duration // deviation of a round trip, √2 Hop/5
	left    int           // workers not finished
	out     ratelimitOut
}

func runRatelimit(done <-chan struct{}, seed, stream uint64, p *ratelimitParams, j backoff.Jitter) ratelimitOut {
	e := engine.New(seed, stream)
	e.StopOn(done)
	//unherdvet:ignore misuse the simulator models retries without a budget on purpose, to compare them
	pol, err := retry.New(retry.Config{MaxAttempts: p.Attempts, Budget: budget.Unlimited,
		Backoff: backoff.Schedule{Base: p.Base, ThrottledBase: p.Base, Cap: p.Cap, Jitter: j}})
	if err != nil {
		return ratelimitOut{err: fmt.Errorf("%w: %w", ErrInvalidParams, err)}
	}
	r := &ratelimitRun{p: p, policy: pol, workers: make([]rlWorker, p.Workers), left: p.Workers,
		tripSD: time.Duration(math.Sqrt2 * float64(p.Hop) / 5),
		limit:  tokenBucket{rate: p.Limit, burst: max(p.Limit*p.Burst.Seconds(), 1), tokens: p.Limit * p.Burst.Seconds()}}
	for w := range r.workers {
		r.workers[w] = rlWorker{jobs: p.Jobs, call: retryengine.Begin(context.Background(), pol)}
		r.send(e, int32(w), e.Normal(p.Hop, p.Hop/5)) // the first way out
	}
	e.Run(r, -1)
	return r.out
}

// roundTrip draws an answer's way back plus the next attempt's way out.
func (r *ratelimitRun) roundTrip(e *engine.Engine) time.Duration {
	return e.Normal(2*r.p.Hop, r.tripSD)
}

// send makes worker id's next attempt, which reaches the limiter after d.
func (r *ratelimitRun) send(e *engine.Engine, id int32, d time.Duration) {
	_ = r.workers[id].call.Admit(context.Background()) // no guards: never rejects
	r.out.attempts++
	e.After(d, rlArrive, id, 0)
}

func (r *ratelimitRun) Handle(e *engine.Engine, ev engine.Event) {
	w := &r.workers[ev.ID]
	ok := r.limit.take(e.Elapsed())
	trip := r.roundTrip(e)
	back := trip / 2 // the answer's way back
	at := e.Elapsed() + back
	if ok {
		s := int(at / time.Second)
		for len(r.out.good) <= s {
			r.out.good = append(r.out.good, 0)
		}
		r.out.good[s]++
		w.call.Done(epoch.Add(at), time.Time{}, nil, 0)
		w.jobs--
		w.call = retryengine.Begin(context.Background(), r.policy)
		if w.jobs == 0 {
			r.left--
			r.out.done = max(r.out.done, at)
			return
		}
		r.send(e, ev.ID, trip)
		return
	}
	r.out.throttled++
	d := w.call.Done(epoch.Add(at), time.Time{}, errTooMany, e.Uint64())
	if d.Reason != nil {
		// Out of attempts: the job is still to do; start it over (after
		// the wait the policy asks for before it returns, if any).
		var wait time.Duration
		if d.Wait {
			wait = d.Delay
		}
		w.call = retryengine.Begin(context.Background(), r.policy)
		r.send(e, ev.ID, trip+wait)
		return
	}
	r.send(e, ev.ID, trip+d.Delay)
}
