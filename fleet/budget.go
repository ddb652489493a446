package fleet

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/draws"
	"github.com/unherd/unherd/internal/validate"
)

// Defaults of [Config] beyond those it shares with budget.RatioConfig.
const (
	// DefaultSyncInterval is how often a process syncs with the ledger.
	DefaultSyncInterval = time.Second
	// DefaultTimeout bounds one sync: a slower ledger counts as down.
	DefaultTimeout = 200 * time.Millisecond
	// DefaultMaxLease is the most retry tokens one process holds.
	DefaultMaxLease = 10000
	// DefaultFallbackMinPerSecond is a process's floor before its first
	// sync tells it its share of the fleet's floor: 1 retry per second
	// per process, a tenth of budget.DefaultMinPerSecond, because every
	// process of a fleet starts, and may fall back, at once.
	DefaultFallbackMinPerSecond = 1
	// Slots is how many slots the window is cut into.
	Slots = 20
)

// State is where a [Budget] takes its retries from.
type State int32

const (
	// Starting is a budget whose first sync has not succeeded yet; it
	// uses its local fallback.
	Starting State = iota
	// Shared is a budget holding a lease from the ledger.
	Shared
	// Fallback is a budget whose last sync failed; it uses its local
	// fallback until a sync succeeds.
	Fallback
)

var stateNames = [...]string{Starting: "starting", Shared: "shared", Fallback: "fallback"}

// String returns the state's lower-case name.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Config configures a [Budget]. The zero value allows the fleet retries up
// to 10% of its requests of the last 10 s plus 10 retries per second,
// synced every second with a 200 ms timeout.
type Config struct {
	// Ratio is the most retries the fleet may make per request in the
	// window. Zero means budget.DefaultRatio (0.1).
	Ratio float64
	// MinPerSecond is the fleet-wide floor of retries per second (not a
	// per-process one): the window allows MinPerSecond * Window seconds
	// retries more than the ratio gives. Zero means
	// budget.DefaultMinPerSecond (10); set NoFloor for none.
	MinPerSecond float64
	// NoFloor removes the floor; MinPerSecond must then be zero.
	NoFloor bool
	// Window is how far back the fleet's requests and retries count. It
	// must be a whole number of milliseconds, at least 20 ms. Zero means
	// budget.DefaultWindow (10 s).
	Window time.Duration
	// SyncInterval is the time between two syncs of a running budget
	// ([Budget.Run]); a process whose lease runs low syncs sooner, at most
	// ten times per interval. SyncInterval, plus its jitter of 10%, plus
	// Timeout must be at most half the Window, so that a lease is spent
	// while it is still counted.
	// Zero means DefaultSyncInterval (1 s), or Window/4 if that is
	// shorter.
	SyncInterval time.Duration
	// Timeout bounds one sync. Zero means DefaultTimeout (200 ms), or
	// SyncInterval/2 if that is shorter.
	Timeout time.Duration
	// MaxLease is the most retry tokens a process asks for at once. A
	// process asks for twice what it retried (or was refused for want of
	// tokens) in the last interval, at least one, and at most what its
	// pace can spend until the next sync. Zero means DefaultMaxLease.
	MaxLease int64
	// Fallback, if set, is a local budget that must also allow a retry
	// before the first sync and while the ledger is unreachable (once the
	// lease is spent); it sees every Record. Nil means none: the
	// process's pacer alone bounds it then, at Ratio times its requests
	// plus its last known share of the fleet's floor
	// (DefaultFallbackMinPerSecond before its first sync), which is a
	// tighter bound than a budget.Ratio of the same Ratio, since it
	// saves no window of retries to spend at once.
	Fallback budget.Budget
	// OnState, if set, is called when the budget changes state, with the
	// error of the failed sync for Fallback (nil otherwise). It is called
	// from the goroutine that syncs, outside every lock, one call at a
	// time.
	OnState func(s State, err error)
	// ID names the process in the ledger. Empty means 16 random hex
	// digits; two budgets must not share an ID.
	ID string
	// Now is the clock of Sync, Run and Withdraw. Nil means time.Now.
	Now func() time.Time
	// Rand supplies the random draws: the jitter of the sync interval,
	// and the admission of a process that earns less than one retry per
	// hundredth of the window (see [Budget.WithdrawAt]). Nil means the
	// global math/rand/v2 source. A budget calls it from many goroutines,
	// so it must be safe for concurrent use; seeded sources are for tests
	// and simulations.
	Rand rand.Source
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	rc := budget.RatioConfig{Ratio: c.Ratio, MinPerSecond: c.MinPerSecond, NoFloor: c.NoFloor, Window: c.Window}
	if err := rc.Validate(); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	w := cmp.Or(c.Window, budget.DefaultWindow)
	switch {
	case w < 20*time.Millisecond || w%time.Millisecond != 0:
		return fmt.Errorf("%w: Config.Window %v is not a whole number of milliseconds of at least 20ms", ErrInvalidConfig, c.Window)
	}
	if err := validate.NonNegative(ErrInvalidConfig,
		validate.Field{Name: "Config.SyncInterval", Value: c.SyncInterval},
		validate.Field{Name: "Config.Timeout", Value: c.Timeout},
		validate.Field{Name: "Config.MaxLease", Value: c.MaxLease},
	); err != nil {
		return err
	}
	if iv, to := c.intervals(); iv+iv/10+to > w/2 {
		return fmt.Errorf("%w: Config.SyncInterval %v (plus its 10%% jitter) and Timeout %v exceed half the Window %v", ErrInvalidConfig, iv, to, w)
	}
	return nil
}

func (c *Config) intervals() (interval, timeout time.Duration) {
	w := cmp.Or(c.Window, budget.DefaultWindow)
	interval = cmp.Or(c.SyncInterval, min(DefaultSyncInterval, w/4))
	timeout = cmp.Or(c.Timeout, min(DefaultTimeout, interval/2))
	return interval, timeout
}

// ErrInvalidConfig is wrapped by the errors of Validate and New.
var ErrInvalidConfig = fmt.Errorf("fleet: %w", budget.ErrInvalidConfig)

// pad keeps the hot counters on cache lines of their own.
type pad [128 - 8]byte

// Budget is a retry budget shared by a fleet through a [Transport]: the
// fleet's retries are at most Ratio times its requests in the window,
// plus the floor. It implements budget.Budget and budget.Refunder.
//
// Withdraw and Record are local: Record adds to a counter with one atomic
// operation and no clock; Withdraw reads the clock once and takes a
// credit from the process's pacer (one compare-and-swap) and a token from
// its lease (one atomic add). A sync (Budget.Sync, or Budget.Run in the
// background) reports the requests counted since the last one, returns
// the unused lease and leases new tokens. When a sync fails or times
// out, the budget spends what is left of its lease, then retries on its
// pacer (and Config.Fallback, if set) until a sync succeeds.
//
// A Budget is safe for concurrent use. The zero value is not usable; call
// New.
type Budget struct {
	tokens   atomic.Int64
	_        pad
	requests atomic.Int64
	_        pad
	pace     pacer
	_        pad
	local    atomic.Int64 // retries the fallback allowed since the last successful sync
	state    atomic.Int32
	lowWater atomic.Int64 // a Withdraw leaving fewer tokens wakes Run
	short    atomic.Int64 // retries refused for want of tokens since Report
	woken    atomic.Bool
	inflight atomic.Bool // Sync is waiting for the ledger
	starved  atomic.Bool // the last grant was less than the want
	_        pad

	// Read-only after New.
	t        Transport
	fallback budget.Budget
	limits   Limits
	id       string
	window   time.Duration
	interval time.Duration
	timeout  time.Duration
	maxLease int64
	onState  func(State, error)
	now      func() time.Time
	rand     func() uint64
	wake     chan struct{}
	ratio    float64
	floor    float64       // the fleet's MinPerSecond, 0 with NoFloor
	span     time.Duration // credits saved are capped at what this span earns

	syncing    sync.Mutex // held by Sync across its round trip
	mu         sync.Mutex // guards what follows
	acked      int64      // requests the ledger booked
	lastOK     time.Time  // when the last sync succeeded
	afterGrant int64      // tokens right after the last sync
	want       int64
	fleetReq   int64
	fleetRet   int64
	syncs      int64
	sentLocal  int64         // local counted by the last Report
	paceAt     int64         // unix ns of the last Settle, for the request rate
	paceReq    int64         // requests counted at paceAt
	reqRate    float64       // the process's requests per second, averaged
	rateAge    time.Duration // how long reqRate has averaged over
	hits       float64       // share of the syncs after which requests had come, averaged
	floorShare float64
	booked     [Slots]bookedSlot // requests this process booked, per slot
}

// bookedSlot is the requests a process booked in one slot of the window.
type bookedSlot struct{ idx, n int64 }

// New validates cfg and returns a budget that syncs through t. It starts
// no goroutine: call Run, or Sync yourself.
func New(cfg Config, t Transport) (*Budget, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("%w: nil Transport", ErrInvalidConfig)
	}
	window := cmp.Or(cfg.Window, budget.DefaultWindow)
	ratio := cmp.Or(cfg.Ratio, budget.DefaultRatio)
	var floor float64
	if !cfg.NoFloor {
		floor = cmp.Or(cfg.MinPerSecond, budget.DefaultMinPerSecond)
	}
	reserve := floor * window.Seconds()
	b := &Budget{
		t:        t,
		fallback: cfg.Fallback,
		limits:   Limits{Ratio: ratio, Reserve: reserve, Slot: window / Slots / time.Millisecond * time.Millisecond, Slots: Slots},
		id:       cfg.ID,
		window:   window,
		maxLease: cmp.Or(cfg.MaxLease, DefaultMaxLease),
		onState:  cfg.OnState,
		now:      cfg.Now,
		wake:     make(chan struct{}, 1),
		want:     1,
		rand:     draws.From(cfg.Rand),
		ratio:    ratio,
		floor:    floor,
		span:     window / 100,
	}
	if cfg.Now == nil {
		b.now = time.Now
	}
	// Until a sync tells it its share of the fleet's floor, a process
	// earns the fallback's floor (or the fleet's, if lower), and saves
	// at most one credit.
	b.floorShare = min(floor, DefaultFallbackMinPerSecond)
	b.paceAt = b.now().UnixNano()
	b.pace.set(b.paceAt, 0, ratio, b.floorShare, 1)
	b.interval, b.timeout = cfg.intervals()
	b.lowWater.Store(math.MinInt64)
	if b.id == "" {
		// The global source is seeded from the system's entropy at start,
		// so processes started together draw different IDs; an ID names,
		// it guards nothing.
		b.id = fmt.Sprintf("%016x", rand.Uint64())
	}
	return b, nil
}

// Withdraw is WithdrawAt at the budget's clock's now (Config.Now).
func (b *Budget) Withdraw(c failure.Class) bool {
	if c >= failure.Permanent {
		return false // without reading the clock
	}
	return b.WithdrawAt(b.now(), c)
}

// WithdrawAt reports whether a retry may go ahead at the instant now. A
// Permanent failure is never retried.
//
// A retry needs two things. First, a credit from the process's pacer:
// each request recorded earns Ratio credits, and the process's share of
// the fleet's floor (its share of the fleet's requests in the window,
// as of the last sync) earns credits over time; credits saved are capped
// at what a hundredth of the window earns, so retries are spread evenly
// over time and an outage does not begin with a burst. A process whose
// cap is below one credit (a slow process) admits with a probability
// equal to its credit, drawn from Config.Rand, except while Shared, when
// its lease paces it instead (it asks for its pace over one interval).
// Second, a token: from the lease while the budget is Shared; otherwise
// from what is left of the lease, and then from Config.Fallback, if set,
// whose retries (and the pacer's alone, if not) the next successful sync
// reports to the ledger as spent. A Shared budget whose lease is spent
// while a sync is on its way answers as in fallback until it settles.
func (b *Budget) WithdrawAt(now time.Time, c failure.Class) bool {
	if c >= failure.Permanent {
		return false
	}
	shared := State(b.state.Load()) == Shared
	slow := shared && b.pace.params.Load().cap < 1
	var took float64
	if !slow {
		var ok bool
		if ok, took = b.pace.take(now.UnixNano(), b.requests.Load(), b.draw); !ok {
			return false
		}
	}
	if shared || b.tokens.Load() > 0 {
		n := b.tokens.Add(-1)
		if shared && n < b.lowWater.Load() && !b.woken.Load() && b.woken.CompareAndSwap(false, true) {
			select {
			case b.wake <- struct{}{}:
			default:
			}
		}
		if n >= 0 {
			return true
		}
		b.tokens.Add(1)
		if shared {
			// Short counts the retries the pace allowed and the lease
			// did not, so that the next sync asks for more.
			b.short.Add(1)
			if slow || !b.inflight.Load() {
				return false // the pacer's credit is spent
			}
			// The lease is spent and a sync is on its way: the
			// fallback answers until it settles, which it does within
			// the timeout, when the ledger has died.
		}
	}
	if b.fallback == nil || b.fallback.Withdraw(c) {
		b.local.Add(1)
		return true
	}
	b.pace.undo(took)
	return false
}

// draw returns a uniform number in [0, 1) from the budget's source.
func (b *Budget) draw() float64 { return float64(b.rand()>>11) / (1 << 53) }

// Record counts a request when a is a call's first attempt, and passes a
// to the fallback, if Config set one.
func (b *Budget) Record(a budget.Attempt) {
	if a.N == 1 {
		b.requests.Add(1)
	}
	if b.fallback != nil {
		b.fallback.Record(a)
	}
}

// Refund gives back a retry withdrawn but not made: its pacer credit, and
// its token to the lease, or, when the budget is not Shared, to the
// fallback if Config set one that is a budget.Refunder.
func (b *Budget) Refund(c failure.Class) {
	b.pace.undo(1)
	if State(b.state.Load()) == Shared {
		b.tokens.Add(1)
		return
	}
	r, ok := b.fallback.(budget.Refunder)
	if ok {
		r.Refund(c)
	}
	if b.fallback == nil || ok {
		if b.local.Add(-1) < 0 {
			b.local.Add(1)
		}
	}
}

// State returns where the budget takes its retries from now.
func (b *Budget) State() State { return State(b.state.Load()) }

// ID returns the name of the process in the ledger.
func (b *Budget) ID() string { return b.id }

// Stats are a budget's counters, for tests and metrics.
type Stats struct {
	// Lease is the tokens the process holds.
	Lease int64
	// FleetRequests and FleetRetries are the fleet's window as the last
	// successful sync saw it.
	FleetRequests, FleetRetries int64
	// Syncs counts the syncs attempted.
	Syncs int64
}

// Stats returns the budget's counters.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{Lease: b.tokens.Load(), FleetRequests: b.fleetReq, FleetRetries: b.fleetRet, Syncs: b.syncs}
}
