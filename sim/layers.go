package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	retryengine "github.com/unherd/unherd/retry/engine"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
)

// layersParams are the parameters of the layers scenario.
type layersParams struct {
	// Layers is the number of services in the chain that each call the
	// next through a retry policy; the last calls the dependency
	// (--layers).
	Layers int `param:"layers" usage:"services in the chain, each retrying its call to the next" check:"positive,max=6"`
	// Attempts is each layer's attempt limit (--attempts).
	Attempts int `param:"attempts" usage:"attempts per call at each layer, counting the first" check:"positive,max=10"`
	// Fail is the share of the dependency's answers that fail (--fail).
	Fail float64 `param:"fail" usage:"share of the dependency's answers that fail" check:"fraction"`
	// Rate is the edge's requests per second and Duration how long they
	// arrive (--rate, --duration).
	Rate     float64       `param:"rate" usage:"requests per second at the edge" check:"positive"`
	Duration time.Duration `param:"duration" usage:"how long requests arrive" check:"positive"`
	// Ratio is the share of each layer's ratio budget (--ratio).
	Ratio float64 `param:"ratio" usage:"share of each layer's ratio budget" check:"positive,fraction"`
	// Hop is the one-way delay between layers (--hop).
	Hop time.Duration `param:"hop" usage:"one-way delay between layers" check:"positive"`
}

func defaultLayersParams() *layersParams {
	return &layersParams{Layers: 3, Attempts: 4, Fail: 1, Rate: 100, Duration: 30 * time.Second,
		Ratio: 0.1, Hop: time.Millisecond}
}

// Fields implements Params: the fields tagged param, in their order.
func (p *layersParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags (checkFields),
// then the rules between fields.
func (p *layersParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
	}
	switch {
	case math.Pow(float64(p.Attempts), float64(p.Layers)) > 1e5:
		return invalid("attempts", "%d attempts over %d layers is more than 100000 attempts per request", p.Attempts, p.Layers)
	case p.Rate*p.Duration.Seconds() > 1e5:
		return invalid("rate", "--rate times --duration is more than 100000 requests")
	case p.Duration < 2*time.Second:
		return invalid("duration", "%v is under 2s", p.Duration)
	}
	return nil
}

// Quick implements Params: 20 s of requests instead of 30 s.
func (p *layersParams) Quick() { p.Duration = 20 * time.Second }

// layerModes are the configurations compared, in table order.
var layerModes = []string{"every layer retries", "edge only", "every layer + ratio budget", "every layer + token bucket"}

var layersScenario = define("layers", "open",
	"3 layers of 4 attempts send 64 attempts per request to a failing dependency; retrying at the edge only sends 4, and a budget per layer caps the product (Google SRE book, ch. 22)",
	defaultLayersParams, runLayersScenario)

type layersOut struct {
	requests, bottom, ok int64
	load                 []int64 // dependency attempts per 100 ms
	err                  error
}

func runLayersScenario(ctx context.Context, p *layersParams, o Options) (*Result, error) {
	outs, err := sweep(ctx, o, len(layerModes), func(i int) layersOut {
		return runLayers(ctx.Done(), o.Seed, uint64(i), p, i)
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "layers", Population: "open", Params: paramValues(p),
		Columns: []string{"mode", "requests", "dependency_attempts", "amplification", "late_amplification", "success_pct"}}
	amp := make([]float64, len(outs))
	late := make([]float64, len(outs))
	chart := Chart{Name: "layers_load", Title: "Attempts reaching the dependency", XLabel: "time (s)", YLabel: "attempts per second, log scale", YScale: scaleLog}
	half := int(p.Duration/(100*time.Millisecond)) / 2
	for i, out := range outs {
		if out.err != nil {
			return nil, out.err
		}
		amp[i] = float64(out.bottom) / float64(out.requests)
		var n int64
		for b := half; b < 2*half; b++ {
			n += out.load[b]
		}
		late[i] = float64(n) / (float64(half) / 10) / p.Rate
		res.Rows = append(res.Rows, Row{"mode": layerModes[i], "requests": out.requests,
			"dependency_attempts": out.bottom, "amplification": round(amp[i], 2),
			"late_amplification": round(late[i], 2), "success_pct": round(100*float64(out.ok)/float64(out.requests), 2)})
		s := Series{Name: fmt.Sprintf("%s: %gx", layerModes[i], round(amp[i], 2))}
		for b := 0; b < 2*half; b++ {
			s.X = append(s.X, round(float64(b)/10, 1))
			s.Y = append(s.Y, float64(10*out.load[b]))
		}
		chart.Series = append(chart.Series, s)
	}
	res.Charts = []Chart{chart}
	every, edge := expectedAttempts(p, false), expectedAttempts(p, true)
	budgeted := math.Pow(1+p.Ratio, float64(p.Layers))
	res.Claims = []Claim{
		newClaim(sreCascading, fmt.Sprintf("retries multiply across layers: %d layers of %d attempts send %.4g attempts per request to the dependency", p.Layers, p.Attempts, every),
			within(amp[0], every, 0.05), "%.2f attempts per request", amp[0]),
		newClaim(sreCascading, fmt.Sprintf("retrying at the edge only sends %.4g", edge),
			within(amp[1], edge, 0.05), "%.2f attempts per request (inner layers begin nested retry calls)", amp[1]),
		newClaim(sreOverload, fmt.Sprintf("a %g%% ratio budget at each layer caps the product near (1+%g)^%d = %.2f", 100*p.Ratio, p.Ratio, p.Layers, budgeted),
			p.Fail < 1 || within(late[2], budgeted, 0.1), "%.2f attempts per request over the run's second half", late[2]),
		newClaim(awsRetry, "a token bucket at each layer stops retries once empty: one attempt per request reaches the dependency",
			p.Fail < 1 || within(late[3], 1, 0.05), "%.2f attempts per request over the run's second half (%.2f over the whole run)", late[3], amp[3]),
	}
	return res, nil
}

// expectedAttempts is the expected number of dependency attempts per edge
// request when every attempt fails independently with probability Fail:
// a layer making up to a attempts of a call that succeeds with
// probability s and costs c makes c*(1-(1-s)^a)/s, and succeeds with
// probability 1-(1-s)^a.
func expectedAttempts(p *layersParams, edgeOnly bool) float64 {
	s, c := 1-p.Fail, 1.0
	// The layers' policies leave NestedAttempts at its default: a nested
	// call makes as many attempts as the default policy's nested call.
	nested := retryengine.AttemptLimit(nestedContext, retry.Default())
	for l := p.Layers - 1; l >= 0; l-- {
		a := p.Attempts
		if edgeOnly && l > 0 {
			a = nested
		}
		f := 1 - s
		n := float64(a)
		if s > 0 {
			n = (1 - math.Pow(f, float64(a))) / s
		}
		c *= n
		s = 1 - math.Pow(f, float64(a))
	}
	return c
}

// Events of the layers model.
const (
	layArrival int32 = iota // the next request reaches the edge
	layAttempt              // call id starts an attempt
	layDone                 // call id's attempt ended; arg is 1 for success
	layFailed               // call id fails, after the wait its policy asked for
)

// layCall is one call at one layer: the edge's call to the second layer,
// or a layer's call to the next, or the last layer's call to the
// dependency.
type layCall struct {
	layer  int
	parent int32            // -1 for the edge
	call   retryengine.Call // its retry state at its layer
}

type layersRun struct {
	p        *layersParams
	mode     int
	policies []*retry.Policy
	calls    []layCall
	free     freeList
	out      layersOut
}

func runLayers(done <-chan struct{}, seed, stream uint64, p *layersParams, mode int) layersOut {
	e := engine.New(seed, stream)
	e.StopOn(done)
	r := &layersRun{p: p, mode: mode}
	for range p.Layers {
		//unherdvet:ignore misuse the simulator models a layer without a budget on purpose, to show the amplification
		var b budget.Budget = budget.Unlimited
		var err error
		switch mode {
		case 2:
			b, err = budget.NewRatio(budget.RatioConfig{Ratio: p.Ratio, NoFloor: true, Now: e.Now})
		case 3:
			b, err = budget.NewTokenBucket(budget.TokenBucketConfig{})
		}
		if err != nil {
			return layersOut{err: err}
		}
		pol, err := retry.New(retry.Config{MaxAttempts: p.Attempts, Backoff: backoff.Schedule{}, Budget: b})
		if err != nil {
			return layersOut{err: err}
		}
		r.policies = append(r.policies, pol)
	}
	r.out.load = make([]int64, int(p.Duration/(100*time.Millisecond))+1)
	e.After(0, layArrival, 0, 0)
	e.Run(r, -1)
	return r.out
}

func (r *layersRun) newCall(layer int, parent int32) int32 {
	// In "edge only", inner layers know their caller retries: their
	// calls are nested, as a context marked by retry.WithOuterRetry makes
	// them.
	c := layCall{layer: layer, parent: parent, call: retryengine.Begin(layerContext(r.mode == 1 && layer > 0), r.policies[layer])}
	id, reused := r.free.take(len(r.calls))
	if reused {
		r.calls[id] = c
	} else {
		r.calls = append(r.calls, c)
	}
	return id
}

func (r *layersRun) Handle(e *engine.Engine, ev engine.Event) {
	switch ev.Kind {
	case layArrival:
		r.out.requests++
		e.After(0, layAttempt, r.newCall(0, -1), 0)
		if next := e.Elapsed() + time.Duration(float64(time.Second)/r.p.Rate); next < r.p.Duration {
			e.At(next, layArrival, 0, 0)
		}
	case layAttempt:
		_ = r.calls[ev.ID].call.Admit(context.Background()) // no guards: never rejects
		layer := r.calls[ev.ID].layer
		if layer < r.p.Layers-1 {
			e.After(r.p.Hop, layAttempt, r.newCall(layer+1, ev.ID), 0)
			return
		}
		r.out.bottom++
		if b := int(e.Elapsed() / (100 * time.Millisecond)); b < len(r.out.load) {
			r.out.load[b]++
		}
		ok := int64(0)
		if e.Float64() >= r.p.Fail {
			ok = 1
		}
		e.After(2*r.p.Hop, layDone, ev.ID, ok)
	case layDone:
		r.done(e, ev.ID, ev.Arg == 1)
	case layFailed:
		r.finish(e, ev.ID, false)
	}
}

// done handles the end of call id's attempt: retry, or end the call and
// report to the layer above.
func (r *layersRun) done(e *engine.Engine, id int32, ok bool) {
	c := &r.calls[id]
	if ok {
		c.call.Done(e.Now(), time.Time{}, nil, 0)
		r.finish(e, id, true)
		return
	}
	d := c.call.Done(e.Now(), time.Time{}, errDown, e.Uint64())
	if d.Reason != nil {
		if d.Wait {
			// The policy waits before it returns the error
			// (retry.WaitRetryDelay, retry.WaitSchedule).
			e.After(d.Delay, layFailed, id, 0)
			return
		}
		r.finish(e, id, false)
		return
	}
	e.After(d.Delay, layAttempt, id, 0)
}

func (r *layersRun) finish(e *engine.Engine, id int32, ok bool) {
	parent := r.calls[id].parent
	r.free.put(id)
	if parent < 0 {
		if ok {
			r.out.ok++
		}
		return
	}
	arg := int64(0)
	if ok {
		arg = 1
	}
	e.After(r.p.Hop, layDone, parent, arg)
}

// nestedContext is the context of a call made while serving a caller that
// retries: retry.WithOuterRetry's mark, which makes a Policy's call make
// Config.NestedAttempts attempts.
var nestedContext = retry.WithOuterRetry(context.Background())

// layerContext returns the context a layer's call begins with: nested
// when an outer layer retries.
func layerContext(nested bool) context.Context {
	if nested {
		return nestedContext
	}
	return context.Background()
}
