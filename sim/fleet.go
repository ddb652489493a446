package sim

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/unherd/unherd/budget"
	fleetb "github.com/unherd/unherd/fleet"
)

// FleetParams configures [RunFleet]. The zero value is the issue's
// experiment: 100,000 clients, each sending one request a second (a
// Poisson stream) with up to 3 attempts, through 10 s of health, a 10 s
// outage in which every attempt fails, and 10 s of recovery; the Redis
// round trip of a sync is modelled as 1 ms.
type FleetParams struct {
	// Clients is the number of client processes. Zero means 100,000.
	Clients int
	// Rate is each client's requests per second. Zero means 1.
	Rate float64
	// Attempts counts the first attempt. Zero means 3.
	Attempts int
	// Before, Outage and After are the spans of health, outage and
	// recovery. Zero means 10 s each.
	Before, Outage, After time.Duration
	// RTT is the round trip of one sync to the ledger. Zero means 1 ms.
	RTT time.Duration
}

// FleetRow is what one kind of budget did during the outage.
type FleetRow struct {
	// Budget names it: "per-client floors" (a budget.Ratio per client,
	// default 10% and 10 retries per second each) or "fleet budget" (a
	// fleetb.Budget per client over one shared fleetb.Ledger, default 10%
	// and 10 retries per second for the whole fleet).
	Budget string
	// Requests and Retries are the first attempts and the retries sent
	// during the outage; Healthy counts the requests before it.
	Requests, Retries, Healthy int64
	// RetriesPerSecond is Retries over the outage's length, and
	// PeakPerSecond the most retries in one second of it.
	RetriesPerSecond, PeakPerSecond float64
	// Amplification is the attempts per request during the outage.
	Amplification float64
	// Syncs counts the round trips to the ledger over the whole run.
	Syncs int64
}

// FleetResult is RunFleet's answer: the two budgets side by side.
type FleetResult struct {
	Params FleetParams
	Rows   [2]FleetRow
}

func (p FleetParams) withDefaults() FleetParams {
	p.Clients = cmp.Or(p.Clients, 100_000)
	p.Rate = cmp.Or(p.Rate, 1)
	p.Attempts = cmp.Or(p.Attempts, 3)
	p.Before = cmp.Or(p.Before, 10*time.Second)
	p.Outage = cmp.Or(p.Outage, 10*time.Second)
	p.After = cmp.Or(p.After, 10*time.Second)
	p.RTT = cmp.Or(p.RTT, time.Millisecond)
	return p
}

// RunFleet runs the fleet experiment twice with the same seed, once with
// per-client floors and once with the fleet budget, driving the library's
// budget.Ratio and fleetb.Budget and fleetb.Ledger under virtual time. Each
// client syncs its fleet budget every second (fleetb.DefaultSyncInterval)
// through Budget.Report and Budget.Settle, the round trip taking RTT;
// Run's early and skipped syncs are not modelled. Retries are sent at
// once after the failure they follow: over a 10 s window the backoff's
// milliseconds do not change the rates.
//
// With per-client floors every client may retry 100 times per window
// whatever its traffic, so the fleet's retries grow with its size; the
// fleet budget holds them to 10% of the fleet's requests plus 10 a
// second.
func RunFleet(p FleetParams, seed uint64) (FleetResult, error) {
	p = p.withDefaults()
	if p.Clients < 1 || p.Clients > math.MaxInt32 || p.Rate <= 0 || p.Attempts < 1 || p.RTT >= fleetb.DefaultSyncInterval {
		return FleetResult{}, fmt.Errorf("sim: invalid FleetParams %+v", p)
	}
	res := FleetResult{Params: p}
	for i, shared := range []bool{false, true} {
		row, _, err := runFleetOnce(nil, p, seed, shared)
		if err != nil {
			return FleetResult{}, err
		}
		res.Rows[i] = row
	}
	return res, nil
}

// Event kinds of the fleet model.
const (
	fleetRequest int32 = iota
	fleetSyncStart
	fleetSyncEnd
)

type fleetModel struct {
	p        FleetParams
	buds     []budget.Budget
	fleets   []*fleetb.Budget
	reports  []fleetb.Report
	ledger   *fleetb.Ledger
	perSec   []int64
	row      FleetRow
	interval time.Duration
}

// refuseAll is the fleet budgets' fallback: no retry before the first
// lease (which comes within a second, long before the outage).
type refuseAll struct{}

func (refuseAll) Withdraw(budget.Class) bool { return false }
func (refuseAll) Record(budget.Attempt)      {}

// runFleetOnce runs one of the two budgets, stopping early when done is
// closed, and returns its row and its retries in each second of the
// outage.
func runFleetOnce(done <-chan struct{}, p FleetParams, seed uint64, shared bool) (FleetRow, []int64, error) {
	e := newEngine(seed, 0)
	e.done = done
	now := e.Now
	m := &fleetModel{p: p, buds: make([]budget.Budget, p.Clients), perSec: make([]int64, int(p.Outage/time.Second)+1), interval: fleetb.DefaultSyncInterval}
	m.row.Budget = "per-client floors"
	if shared {
		m.row.Budget = "fleet budget"
		m.ledger = fleetb.NewLedger(now)
		m.fleets = make([]*fleetb.Budget, p.Clients)
		m.reports = make([]fleetb.Report, p.Clients)
	}
	for i := range p.Clients {
		var b budget.Budget
		if shared {
			fb, err := fleetb.New(fleetb.Config{Now: now, ID: strconv.Itoa(i), Fallback: refuseAll{}}, m.ledger)
			if err != nil {
				return FleetRow{}, nil, err
			}
			m.fleets[i] = fb
			b = fb
			e.at(time.Duration(e.float()*float64(m.interval)), fleetSyncStart, int32(i), 0)
		} else {
			r, err := budget.NewRatio(budget.RatioConfig{Now: now})
			if err != nil {
				return FleetRow{}, nil, err
			}
			b = r
		}
		m.buds[i] = b
		e.at(e.exp(time.Duration(float64(time.Second)/p.Rate)), fleetRequest, int32(i), 0)
	}
	e.run(m, p.Before+p.Outage+p.After)
	o := p.Outage.Seconds()
	m.row.RetriesPerSecond = float64(m.row.Retries) / o
	for _, n := range m.perSec[:len(m.perSec)-1] {
		m.row.PeakPerSecond = max(m.row.PeakPerSecond, float64(n))
	}
	if m.row.Requests > 0 {
		m.row.Amplification = float64(m.row.Requests+m.row.Retries) / float64(m.row.Requests)
	}
	return m.row, m.perSec[:len(m.perSec)-1], nil
}

func (m *fleetModel) handle(e *engine, ev event) {
	switch ev.kind {
	case fleetRequest:
		m.call(e, ev.id)
		e.after(e.exp(time.Duration(float64(time.Second)/m.p.Rate)), fleetRequest, ev.id, 0)
	case fleetSyncStart:
		m.reports[ev.id] = m.fleets[ev.id].Report(e.Now())
		e.after(m.p.RTT, fleetSyncEnd, ev.id, 0)
	case fleetSyncEnd:
		// The script runs halfway through the round trip.
		r := m.reports[ev.id]
		g := m.ledger.SyncAt(e.Now().Add(-m.p.RTT/2), r)
		m.fleets[ev.id].Settle(e.Now(), r, g, nil)
		m.row.Syncs++
		e.after(m.interval-m.p.RTT, fleetSyncStart, ev.id, 0)
	}
}

// call makes one request of client id: every attempt fails during the
// outage, the first succeeds otherwise.
func (m *fleetModel) call(e *engine, id int32) {
	b := m.buds[id]
	t := e.elapsed()
	down := t >= m.p.Before && t < m.p.Before+m.p.Outage
	if !down {
		if t < m.p.Before {
			m.row.Healthy++
		}
		b.Record(budget.Attempt{N: 1})
		return
	}
	m.row.Requests++
	b.Record(budget.Attempt{N: 1, Failed: true})
	for n := 2; n <= m.p.Attempts && b.Withdraw(budget.Transient); n++ {
		m.row.Retries++
		m.perSec[int((t-m.p.Before)/time.Second)]++
		b.Record(budget.Attempt{N: n, Failed: true, Charged: budget.Transient})
	}
}
