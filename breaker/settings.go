package breaker

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
)

// Defaults applied to zero fields of [Settings]. The trip thresholds and
// the rolling window are Hystrix's defaults (20 calls, 50%, 10 s in 10
// buckets); the consecutive-failure threshold is sony/gobreaker's; the
// open duration is Hystrix's sleep window.
const (
	DefaultConsecutiveFailures = 5
	DefaultFailureRate         = 0.5
	DefaultMinCalls            = 20
	DefaultWindow              = 10 * time.Second
	DefaultWindowBuckets       = 10
	DefaultOpenDuration        = 5 * time.Second
	DefaultOpenJitter          = 0.2
	DefaultHalfOpenProbes      = 1
	DefaultSuccessThreshold    = 1
)

// ErrInvalidSettings is wrapped by every error Validate and New return.
var ErrInvalidSettings = errors.New("breaker: invalid settings")

// Settings configures a [Breaker]. The zero value is a breaker that trips
// after 5 consecutive failures, or when at least half of at least 20 calls
// in the last 10 s failed; stays open 5 s plus up to 20% jitter; then lets
// one probe through and closes when it succeeds.
type Settings struct {
	// ConsecutiveFailures trips the breaker after this many failures in a
	// row in the closed state. Zero means DefaultConsecutiveFailures (5);
	// a negative value turns this trigger off.
	ConsecutiveFailures int

	// FailureRate trips the breaker when the share of failed calls in the
	// rolling window reaches it, once the window holds at least MinCalls
	// calls. Zero means DefaultFailureRate (0.5); a negative value turns
	// this trigger off; it must not exceed 1.
	FailureRate float64

	// MinCalls is how many calls the window must hold before FailureRate
	// is judged. Zero means DefaultMinCalls (20).
	MinCalls int

	// Window is the length of the rolling window for FailureRate, split
	// into WindowBuckets buckets that expire one at a time. Zero means
	// DefaultWindow (10 s) and DefaultWindowBuckets (10).
	Window        time.Duration
	WindowBuckets int

	// OpenDuration is how long the breaker stays open before letting
	// probes through, before jitter. Zero means DefaultOpenDuration (5 s).
	// Any positive value up to math.MaxInt64 works: an open period too
	// long to represent saturates and never ends.
	OpenDuration time.Duration

	// OpenJitter is the largest fraction of OpenDuration added at random
	// to each open period, so that a fleet of clients that tripped
	// together does not probe together. Zero means DefaultOpenJitter
	// (0.2); a negative value means no jitter; it must not exceed 1.
	OpenJitter float64

	// HalfOpenProbes is how many probes may be in flight at once in the
	// half-open state; further calls are rejected with ErrTooManyProbes.
	// Zero means DefaultHalfOpenProbes (1).
	HalfOpenProbes int

	// SuccessThreshold is how many probes must succeed, with no failure
	// between them, to close the breaker. Any failed probe reopens it.
	// Zero means DefaultSuccessThreshold (1).
	SuccessThreshold int

	// IsFailure decides whether an outcome counts as a failure. Nil means
	// DefaultIsFailure: Transient, Timeout and Throttled errors count,
	// Permanent ones (a 404, a validation error) do not. Abandoned
	// outcomes never reach it: they count as neither.
	IsFailure func(admission.Outcome) bool

	// Classify classifies the errors passed to the done function of
	// Allow. Nil means engine.DefaultClassify. (Through the Guard path, the
	// retry loop classifies with its own classifier.)
	Classify func(error) failure.Class

	// OnStateChange, if set, is called after every state change, outside
	// the breaker's lock. Calls for changes that happen at nearly the same
	// time on different goroutines may arrive in either order.
	OnStateChange func(from, to State)

	// Observer, if set, receives an observe.Event (BreakerTransition)
	// after every state change, outside the lock, as OnStateChange does,
	// with the context of the call that caused it: the one given to
	// Admit (open to half-open) or to Done (the others), which the retry
	// loop calls with the call's context. Changes made through AdmitAt,
	// DoneAt or Allow's done function carry context.Background(). Nil
	// means none, at no cost.
	Observer observe.Observer

	// Now is the clock. Nil means time.Now. The breaker reads it only on
	// failures and while not closed.
	Now func() time.Time

	// Rand supplies the draws for OpenJitter. Nil means math/rand/v2's
	// global source. Draws happen under the breaker's lock, so a seeded
	// source that is not safe for concurrent use is fine.
	Rand rand.Source
}

// DefaultIsFailure is the failure test used when Settings.IsFailure is
// nil: an error counts as a failure unless it is Permanent. A dependency
// that answers "not found" or "invalid argument" is working.
func DefaultIsFailure(o admission.Outcome) bool {
	return o.Err != nil && o.Class != failure.Permanent
}

// Validate reports settings that cannot work, naming the field.
func (s *Settings) Validate() error {
	switch {
	case s.ConsecutiveFailures < 0 && s.FailureRate < 0:
		return fmt.Errorf("%w: both ConsecutiveFailures and FailureRate are off: the breaker could never trip", ErrInvalidSettings)
	case !(s.FailureRate <= 1): // also rejects NaN
		return fmt.Errorf("%w: FailureRate %v is above 1", ErrInvalidSettings, s.FailureRate)
	case s.MinCalls < 0:
		return fmt.Errorf("%w: MinCalls %d is negative; use 0 for the default of %d", ErrInvalidSettings, s.MinCalls, DefaultMinCalls)
	case s.Window < 0:
		return fmt.Errorf("%w: Window %v is negative; use 0 for the default of %v", ErrInvalidSettings, s.Window, DefaultWindow)
	case s.WindowBuckets < 0 || s.WindowBuckets > 1000:
		return fmt.Errorf("%w: WindowBuckets %d is outside [0, 1000]", ErrInvalidSettings, s.WindowBuckets)
	case s.OpenDuration < 0:
		return fmt.Errorf("%w: OpenDuration %v is negative; use 0 for the default of %v", ErrInvalidSettings, s.OpenDuration, DefaultOpenDuration)
	case !(s.OpenJitter <= 1) || s.OpenJitter != s.OpenJitter:
		return fmt.Errorf("%w: OpenJitter %v is above 1", ErrInvalidSettings, s.OpenJitter)
	case s.HalfOpenProbes < 0:
		return fmt.Errorf("%w: HalfOpenProbes %d is negative; use 0 for the default of %d", ErrInvalidSettings, s.HalfOpenProbes, DefaultHalfOpenProbes)
	case s.SuccessThreshold < 0:
		return fmt.Errorf("%w: SuccessThreshold %d is negative; use 0 for the default of %d", ErrInvalidSettings, s.SuccessThreshold, DefaultSuccessThreshold)
	}
	if window, buckets := s.window(); window < time.Duration(buckets) {
		return fmt.Errorf("%w: Window %v is shorter than %d ns (one per bucket)", ErrInvalidSettings, window, buckets)
	}
	return nil
}

// window returns the rolling window's length and bucket count, defaults
// applied.
func (s *Settings) window() (time.Duration, int) {
	return cmp.Or(s.Window, DefaultWindow), cmp.Or(s.WindowBuckets, DefaultWindowBuckets)
}
