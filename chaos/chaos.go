package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// ErrInjected is matched by every error an Injector injects.
var ErrInjected = errors.New("chaos: injected fault")

// ErrInvalidConfig is wrapped by every error New returns.
var ErrInvalidConfig = errors.New("chaos: invalid config")

// Faults says what a call may get. The zero value injects nothing. The
// three rates are probabilities per call; their sum must not exceed 1.
type Faults struct {
	// Latency, if set, is added before every call (faulty or not).
	Latency Latency

	// ErrorRate is the share of calls that fail with an error matching
	// ErrInjected (Err, if set, wrapped in it).
	ErrorRate float64
	// Err is the error of ErrorRate's calls. Nil means ErrInjected alone.
	Err error

	// ResetRate is the share of calls that fail as if the connection was
	// reset: the error matches ErrInjected and syscall.ECONNRESET.
	ResetRate float64

	// StatusRate is the share of calls answered with Status without
	// reaching the base: the Transport returns a response with that
	// status and an empty body, Wrap a *StatusError.
	StatusRate float64
	// Status is the injected status. Zero means 503 Service Unavailable.
	Status int
	// RetryAfter, if positive, is sent with an injected status as a
	// Retry-After header, in whole seconds rounded up (and carried by
	// Wrap's *StatusError as it is).
	RetryAfter time.Duration
}

// Phase replaces the base Faults while the schedule's time is in [From,
// To), measured from Config.Start: an outage, a brown-out, a slow spell.
type Phase struct {
	From, To time.Duration
	Faults   Faults
}

// Config configures an [Injector]. The zero value injects nothing.
type Config struct {
	// Faults apply to every call outside the phases.
	Faults Faults
	// Phases replace Faults during their windows. When windows overlap,
	// the first listed wins.
	Phases []Phase
	// Seed seeds the draws. The same seed and sequence of calls give the
	// same faults.
	Seed uint64
	// Now is the clock of the schedule and nothing else. Nil means
	// time.Now.
	Now func() time.Time
	// Start is the instant the phases are measured from. Zero means the
	// time New was called.
	Start time.Time
}

// Counts are the calls an Injector has seen and what it did to them.
type Counts struct {
	Calls    int64 // calls seen
	Delayed  int64 // calls given a positive latency
	Errors   int64 // injected errors
	Resets   int64 // injected connection resets
	Statuses int64 // injected statuses
}

// Injector decides the faults of each call. It is safe for concurrent
// use; share one among the transports and functions of one test. The zero
// Injector is not usable; call New.
type Injector struct {
	faults Faults
	phases []Phase
	now    func() time.Time
	start  time.Time

	mu     sync.Mutex
	rand   *rand.Rand
	counts Counts
}

// New validates cfg and returns an Injector.
func New(cfg Config) (*Injector, error) {
	if err := cfg.Faults.validate(); err != nil {
		return nil, fmt.Errorf("%w: Faults: %w", ErrInvalidConfig, err)
	}
	for i, p := range cfg.Phases {
		if p.From < 0 || p.To <= p.From {
			return nil, fmt.Errorf("%w: Phases[%d]: window [%v, %v) is empty or starts before 0", ErrInvalidConfig, i, p.From, p.To)
		}
		if err := p.Faults.validate(); err != nil {
			return nil, fmt.Errorf("%w: Phases[%d]: %w", ErrInvalidConfig, i, err)
		}
	}
	inj := &Injector{
		faults: cfg.Faults,
		phases: append([]Phase(nil), cfg.Phases...),
		now:    cfg.Now,
		start:  cfg.Start,
		rand:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	if inj.now == nil {
		inj.now = time.Now
	}
	if inj.start.IsZero() {
		inj.start = inj.now()
	}
	return inj, nil
}

func (f *Faults) validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"ErrorRate", f.ErrorRate}, {"ResetRate", f.ResetRate}, {"StatusRate", f.StatusRate}} {
		if !(r.v >= 0 && r.v <= 1) { // also rejects NaN
			return fmt.Errorf("faults: %s %v is outside [0, 1]", r.name, r.v)
		}
	}
	if sum := f.ErrorRate + f.ResetRate + f.StatusRate; sum > 1+1e-9 {
		return fmt.Errorf("faults: ErrorRate + ResetRate + StatusRate is %v, above 1", sum)
	}
	if f.Status != 0 && (f.Status < 100 || f.Status > 599) {
		return fmt.Errorf("faults: Status %d is not an HTTP status", f.Status)
	}
	if f.RetryAfter < 0 {
		return fmt.Errorf("faults: RetryAfter %v is negative", f.RetryAfter)
	}
	return nil
}

// Counts returns what the Injector has done so far.
func (inj *Injector) Counts() Counts {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return inj.counts
}

// kind is the fault a call gets.
type kind uint8

const (
	none kind = iota
	injectError
	injectReset
	injectStatus
)

// decision is one call's draw.
type decision struct {
	delay  time.Duration
	kind   kind
	faults *Faults // the Faults that applied
}

// decide draws the latency and fault of the next call.
func (inj *Injector) decide() decision {
	f := inj.active(inj.now().Sub(inj.start))
	inj.mu.Lock()
	defer inj.mu.Unlock()
	d := decision{faults: f}
	if f.Latency != nil {
		d.delay = max(f.Latency(inj.rand), 0)
	}
	switch u := inj.rand.Float64(); {
	case u < f.ErrorRate:
		d.kind = injectError
		inj.counts.Errors++
	case u < f.ErrorRate+f.ResetRate:
		d.kind = injectReset
		inj.counts.Resets++
	case u < f.ErrorRate+f.ResetRate+f.StatusRate:
		d.kind = injectStatus
		inj.counts.Statuses++
	}
	inj.counts.Calls++
	if d.delay > 0 {
		inj.counts.Delayed++
	}
	return d
}

// active returns the Faults in force at elapsed time e.
func (inj *Injector) active(e time.Duration) *Faults {
	for i := range inj.phases {
		if p := &inj.phases[i]; e >= p.From && e < p.To {
			return &p.Faults
		}
	}
	return &inj.faults
}

// status returns the injected status of f.
func (f *Faults) status() int {
	if f.Status == 0 {
		return http.StatusServiceUnavailable
	}
	return f.Status
}
