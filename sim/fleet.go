package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	retryengine "github.com/unherd/unherd/retry/engine"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	fleetb "github.com/unherd/unherd/fleet"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
)

// fleetParams configures [runFleet]. The zero value is the issue's
// experiment: 100,000 clients, each sending one request a second (a
// Poisson stream) with up to 3 attempts, through 10 s of health, a 10 s
// outage in which every attempt fails, and 10 s of recovery; the Redis
// round trip of a sync is modelled as 1 ms.
type fleetParams struct {
	// Clients is the number of client processes. Zero means 100,000.
	Clients int `param:"clients" usage:"client processes" check:"positive,max=1000000"`
	// Rate is each client's requests per second. Zero means 1.
	Rate float64 `param:"rate" usage:"requests per second per client"`
	// Attempts counts the first attempt. Zero means 3.
	Attempts int `param:"attempts" usage:"attempts per request, the first included" check:"positive,max=100"`
	// Before, Outage and After are the spans of health, outage and
	// recovery. Zero means 10 s each.
	Before time.Duration `param:"before" usage:"healthy time before the outage"`
	Outage time.Duration `param:"outage" usage:"length of the outage, in which every attempt fails"`
	After  time.Duration `param:"after" usage:"time after the outage"`
	// RTT is the round trip of one sync to the ledger. Zero means 1 ms.
	RTT time.Duration `param:"rtt" usage:"round trip of one sync to the shared ledger"`
}

// fleetRow is what one kind of budget did during the outage.
type fleetRow struct {
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

// fleetResult is runFleet's answer: the two budgets side by side.
type fleetResult struct {
	Params fleetParams
	Rows   [2]fleetRow
}

func (p fleetParams) withDefaults() fleetParams {
	p.Clients = cmp.Or(p.Clients, 100_000)
	p.Rate = cmp.Or(p.Rate, 1)
	p.Attempts = cmp.Or(p.Attempts, 3)
	p.Before = cmp.Or(p.Before, 10*time.Second)
	p.Outage = cmp.Or(p.Outage, 10*time.Second)
	p.After = cmp.Or(p.After, 10*time.Second)
	p.RTT = cmp.Or(p.RTT, time.Millisecond)
	return p
}

// runFleet runs the fleet experiment twice with the same seed, once with
// per-client floors and once with the fleet budget, driving the library's
// budget.Ratio and fleetb.Budget and fleetb.Ledger under virtual time. Each
// client syncs its fleet budget every second (fleetb.DefaultSyncInterval)
// through Budget.Report and Budget.Settle, the round trip taking RTT;
// Run's early and skipped syncs are not modelled. Retries are sent at
// once after the failure they follow: over a 10 s window the backoff's
// milliseconds do not change the rates. Each client's requests are
// calls of its own retry.Policy (retry/engine.Call) over its budget.
//
// With per-client floors every client may retry 100 times per window
// whatever its traffic, so the fleet's retries grow with its size; the
// fleet budget holds them to 10% of the fleet's requests plus 10 a
// second.
func runFleet(p fleetParams, seed uint64) (fleetResult, error) {
	p = p.withDefaults()
	if p.Clients < 1 || p.Clients > math.MaxInt32 || p.Rate <= 0 || p.Attempts < 1 || p.RTT >= fleetb.DefaultSyncInterval {
		return fleetResult{}, fmt.Errorf("sim: invalid fleetParams %+v", p)
	}
	res := fleetResult{Params: p}
	for i, shared := range []bool{false, true} {
		row, _, err := runFleetOnce(nil, p, seed, shared)
		if err != nil {
			return fleetResult{}, err
		}
		res.Rows[i] = row
	}
	return res, nil
}

// fleetSync is the fleet model's one event: client id's sync with the
// ledger comes back.
const fleetSync int32 = 0

// fleetModel is one run of the fleet experiment.
//
// A client's requests touch nothing but its own budget, and the floors'
// clients share nothing at all, so neither is an event. With per-client
// floors each client is run on its own, its whole stream of requests in
// time order, one client after another. With the fleet budget the
// ledger is shared: the one event is a client's sync, in time order over
// the fleet, and the client's requests since its last sync are run when
// it comes, each at its own instant and in order, those before the
// report first (Report), those during the round trip next, then the
// ledger's answer (Ledger.SyncAt halfway through the round trip,
// Budget.Settle at its end). Each budget, and the ledger, sees its calls
// at the same instants and in the same order as with an event per
// request; the budgets read no clock of their own here (retries are
// asked for with WithdrawAt, at the request's instant; their Now serves
// Sync and Run only), so the results are the same model's, in a third of
// the events and with one client's state in the cache at a time. Only
// the order of the random draws differs.
type fleetModel struct {
	p        fleetParams
	mean     time.Duration // between a client's requests
	fleets   []*fleetb.Budget
	cur      current         // the budget of the client whose request is being made
	policy   *retry.Policy   // every client's policy, over cur
	next     []time.Duration // each client's next request, fleet budget only
	ledger   *fleetb.Ledger
	perSec   []int64
	row      fleetRow
	interval time.Duration
}

// refuseAll is the fleet budgets' fallback: no retry before the first
// lease (which comes within a second, long before the outage).
type refuseAll struct{}

func (refuseAll) Withdraw(failure.Class) bool { return false }
func (refuseAll) Record(budget.Attempt)       {}

// runFleetOnce runs one of the two budgets, stopping early when done is
// closed, and returns its row and its retries in each second of the
// outage.
func runFleetOnce(done <-chan struct{}, p fleetParams, seed uint64, shared bool) (fleetRow, []int64, error) {
	e := engine.New(seed, 0)
	e.StopOn(done)
	m := &fleetModel{p: p, mean: time.Duration(float64(time.Second) / p.Rate),
		perSec: make([]int64, int(p.Outage/time.Second)+1), interval: fleetb.DefaultSyncInterval}
	end := p.Before + p.Outage + p.After
	if err := m.newPolicy(); err != nil {
		return fleetRow{}, nil, err
	}
	var err error
	if shared {
		err = m.runShared(e, end)
	} else {
		err = m.runFloors(e, end)
	}
	if err != nil {
		return fleetRow{}, nil, err
	}
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

// runFloors runs the per-client floors, one client after another: a
// budget.Ratio each, on a clock that reads the instant of the request at
// hand.
func (m *fleetModel) runFloors(e *engine.Engine, end time.Duration) error {
	m.row.Budget = "per-client floors"
	var now time.Duration
	clock := func() time.Time { return epoch.Add(now) }
	for i := range m.p.Clients {
		if i%1024 == 0 && e.Stopped() {
			return nil // the sweep discards a stopped run
		}
		//unherdvet:ignore misuse each simulated client owns its budget for the whole run, as a real client does
		b, err := budget.NewRatio(budget.RatioConfig{Now: clock})
		if err != nil {
			return err
		}
		m.cur.b = b
		for t := e.Exp(m.mean); t <= end; t += e.Exp(m.mean) {
			now = t
			m.call(t)
		}
	}
	return nil
}

// newPolicy builds the clients' retry policy, over m.cur: Attempts
// attempts, retried at once (over a 10 s window the backoff's
// milliseconds do not change the rates), and a call the budget stops
// ends at once (the model counts retries, not the callers' waits).
func (m *fleetModel) newPolicy() error {
	var err error
	m.policy, err = retry.New(retry.Config{MaxAttempts: m.p.Attempts, Backoff: backoff.Schedule{Immediate: true},
		Budget: &m.cur, OnBudgetExhausted: retry.ReturnAtOnce})
	return err
}

// current is the budget of the client whose request the model is making:
// it makes one request at a time, so one policy serves every client,
// through the budget of the client at hand. A fleet budget paces retries
// by time, and the model runs a client's requests ahead of the engine's
// clock (see fleetModel), so it is asked at the request's instant.
type current struct {
	b  budget.Budget  // per-client floors: the client's budget.Ratio
	fb *fleetb.Budget // fleet budget: the client's, asked at t
	t  time.Duration  // the request's instant
}

func (c *current) Withdraw(cl failure.Class) bool {
	if c.fb != nil {
		return c.fb.WithdrawAt(epoch.Add(c.t), cl)
	}
	return c.b.Withdraw(cl)
}

func (c *current) Record(a budget.Attempt) {
	if c.fb != nil {
		c.fb.Record(a)
		return
	}
	c.b.Record(a)
}

// runShared runs the fleet budget: a fleetb.Budget per client over one
// fleetb.Ledger, each client syncing every interval from a random phase.
func (m *fleetModel) runShared(e *engine.Engine, end time.Duration) error {
	m.row.Budget = "fleet budget"
	m.ledger = fleetb.NewLedger(e.Now)
	m.fleets = make([]*fleetb.Budget, m.p.Clients)
	m.next = make([]time.Duration, m.p.Clients)
	// The clients are alike but for their phase: numbered in the order
	// of their phases, they sync in the order they lie in memory.
	phase := make([]time.Duration, m.p.Clients)
	for i := range phase {
		phase[i] = time.Duration(e.Float64() * float64(m.interval))
	}
	slices.Sort(phase)
	for i := range m.p.Clients {
		fb, err := fleetb.New(fleetb.Config{Now: e.Now, ID: strconv.Itoa(i), Fallback: refuseAll{}, Rand: e.Source()}, m.ledger)
		if err != nil {
			return err
		}
		m.fleets[i] = fb
		e.At(phase[i]+m.p.RTT, fleetSync, int32(i), 0)
		m.next[i] = e.Exp(m.mean)
	}
	e.Run(m, end)
	for i := range m.p.Clients {
		m.requests(e, int32(i), end)
	}
	return nil
}

func (m *fleetModel) Handle(e *engine.Engine, ev engine.Event) {
	b := m.fleets[ev.ID]
	back := e.Elapsed()
	sent := back - m.p.RTT
	m.requests(e, ev.ID, sent)
	r := b.Report(epoch.Add(sent))
	m.requests(e, ev.ID, back)
	// The script runs halfway through the round trip.
	g := m.ledger.SyncAt(epoch.Add(back-m.p.RTT/2), r)
	b.Settle(e.Now(), r, g, nil)
	m.row.Syncs++
	e.After(m.interval, fleetSync, ev.ID, 0)
}

// requests makes client id's requests up to the instant upto, in order.
func (m *fleetModel) requests(e *engine.Engine, id int32, upto time.Duration) {
	m.cur.fb = m.fleets[id]
	for m.next[id] <= upto {
		m.call(m.next[id])
		m.next[id] += e.Exp(m.mean)
	}
}

// call makes one request, at t, through the clients' policy (retryengine.Call,
// which tells the client's budget of every attempt and asks it for every
// retry): every attempt fails during the outage, the first succeeds
// otherwise.
func (m *fleetModel) call(t time.Duration) {
	m.cur.t = t
	c := retryengine.Begin(context.Background(), m.policy)
	_ = c.Admit(context.Background()) // no guards: never rejects
	down := t >= m.p.Before && t < m.p.Before+m.p.Outage
	if !down {
		if t < m.p.Before {
			m.row.Healthy++
		}
		c.Done(time.Time{}, time.Time{}, nil, 0)
		return
	}
	m.row.Requests++
	for c.Done(epoch.Add(t), time.Time{}, errDown, 0).Reason == nil {
		m.row.Retries++
		m.perSec[int((t-m.p.Before)/time.Second)]++
		_ = c.Admit(context.Background())
	}
}
