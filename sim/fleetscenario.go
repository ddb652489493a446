package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unherd/unherd/budget"
)

// Fields implements Params: the fields tagged param, in their order.
func (p *fleetParams) Fields() []Field { return fieldsOf(p) }

// Validate implements Params: the fields' check tags (checkFields),
// then the rules between fields.
func (p *fleetParams) Validate() error {
	if err := checkFields(p); err != nil {
		return err
	}
	switch {
	case !(p.Rate > 0 && p.Rate <= 1000):
		return invalid("rate", "%v must be above 0 and at most 1000", p.Rate)
	case p.Before < 0 || p.After < 0:
		return invalid("before", "--before %v and --after %v must not be negative", p.Before, p.After)
	case p.Outage < time.Second || p.Outage > time.Hour:
		return invalid("outage", "%v must be 1s to 1h", p.Outage)
	case p.RTT <= 0 || p.RTT >= time.Second:
		return invalid("rtt", "%v must be above 0 and below the 1s sync interval", p.RTT)
	}
	return nil
}

// Quick implements Params: 20,000 clients, so that five seeds take
// seconds (the shape, and the ratio between the two budgets, do not
// depend on the fleet's size).
func (p *fleetParams) Quick() { p.Clients = 20_000 }

var fleetScenario = define("fleet", "open",
	"A fleet of clients (100,000 by default, 20,000 in the report) through a 10 s outage: per-client retry budgets with a floor of 10 retries/s each against one fleet-wide budget (package fleet's leases over a shared ledger, as unherdredis keeps it in Redis)",
	defaultFleetParams, runFleetScenario)

func defaultFleetParams() *fleetParams {
	p := fleetParams{}.withDefaults()
	return &p
}

const fleetSource = "unherd's design: a per-client floor does not bound a fleet; budgets applied across the fleet, as Envoy and Linkerd apply them in their proxies (https://linkerd.io/2/reference/retries/)"

func runFleetScenario(ctx context.Context, p *fleetParams, o Options) (*Result, error) {
	type out struct {
		row    fleetRow
		perSec []int64
		err    error
	}
	outs, err := sweep(ctx, o, 2, func(i int) out {
		row, perSec, err := runFleetOnce(ctx.Done(), *p, o.Seed, i == 1)
		return out{row, perSec, err}
	})
	if err == nil {
		err = errors.Join(outs[0].err, outs[1].err)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "fleet", Population: "open", Params: paramValues(p),
		Columns: []string{"budget", "requests", "retries", "retries_per_s", "peak_per_s", "amplification", "syncs"}}
	chart := Chart{Name: "fleet_retries", Title: "Retries per second during the outage",
		XLabel: fmt.Sprintf("second of the outage (%s clients at %v request/s each, open population)", thousands(p.Clients), p.Rate),
		YLabel: "retries per second, log scale", YScale: scaleLog,
		Lines: []Line{
			{Y: float64(p.Attempts-1) * float64(p.Clients) * p.Rate, Label: fmt.Sprintf("every retry allowed: %d per request", p.Attempts-1)},
			{Y: 0.1*float64(p.Clients)*p.Rate + 10, Label: "fleet budget's rate: 10% of requests + 10/s"},
		}}
	for _, o := range outs {
		r := o.row
		res.Rows = append(res.Rows, Row{"budget": r.Budget, "requests": r.Requests, "retries": r.Retries,
			"retries_per_s": round(r.RetriesPerSecond, 0), "peak_per_s": round(r.PeakPerSecond, 0),
			"amplification": round(r.Amplification, 2), "syncs": r.Syncs})
		xs, ys := make([]float64, len(o.perSec)), make([]float64, len(o.perSec))
		for i, n := range o.perSec {
			xs[i], ys[i] = float64(i), float64(n)
		}
		chart.Series = append(chart.Series, Series{Name: r.Budget, X: xs, Y: ys})
	}
	// The fleet budget's first second spends credits saved before the
	// outage; its window counts them until they are a window old, so the
	// window's last second has that much less left.
	if w := int(budget.DefaultWindow / time.Second); w >= 2 && w <= len(outs[1].perSec) {
		chart.Notes = []Note{{X: float64(w - 1), Y: float64(outs[1].perSec[w-1]),
			Text: fmt.Sprintf("the budget's %g s window still counts second 0's extra retries", budget.DefaultWindow.Seconds())}}
	}
	res.Charts = []Chart{chart}
	floors, shared := outs[0].row, outs[1].row
	// In any 10 s window the fleet budget allows 10% of the window's
	// requests plus 100; the healthy time before the outage counts once,
	// as one window's savings. 10% slack for the window's 500 ms steps.
	windows := 1 + p.Outage.Seconds()/10
	bound := 1.1 * (0.1*float64(shared.Healthy+shared.Requests) + 100*windows)
	res.Claims = []Claim{
		newClaim(fleetSource, "with a floor of 10 retries per second per client, the fleet's retries grow with its size: an outage is met with every attempt the clients may make",
			floors.Amplification > 0.9*float64(p.Attempts) || floors.RetriesPerSecond >= 0.9*10*float64(p.Clients),
			"per-client floors: %.0f retries per second from %.0f clients, %.2f attempts per request", floors.RetriesPerSecond, float64(p.Clients), floors.Amplification),
		newClaim(fleetSource, "a fleet-wide budget holds the fleet's retries to 10% of its requests plus one fleet-wide floor of 10 per second, whatever the number of clients",
			float64(shared.Retries) <= bound,
			"fleet budget: %.0f retries in the outage against a bound of %.0f; %.0f per second, %.2f attempts per request, %.1fx fewer retries than per-client floors",
			float64(shared.Retries), bound, shared.RetriesPerSecond, shared.Amplification, float64(floors.Retries)/max(float64(shared.Retries), 1)),
	}
	return res, nil
}

// thousands writes n with a comma between thousands: 100,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
