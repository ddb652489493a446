package limit

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrInvalidConfig is wrapped by every error New and the algorithms'
// constructors and Validate methods return.
var ErrInvalidConfig = errors.New("limit: invalid config")

// Config configures a [Limiter]. The zero value is an adaptive limit with
// [Gradient2]'s defaults.
type Config struct {
	// Algorithm decides the limit from the samples the limiter's tokens
	// report. Nil means a [Gradient2] with the zero [Gradient2Config].
	// An algorithm keeps state: give each Limiter its own.
	Algorithm Algorithm
}

// Limiter admits at most Limit() requests at once and, through its
// [Algorithm], moves that limit with the latency and drops its requests
// report. The time is an argument of every method that needs one, so the
// same code runs on the real clock and in a simulation.
//
// Acquire and a token's release are safe for concurrent use. Acquire is
// lock-free; a released sample takes a short mutex to update the
// algorithm, except with [Fixed], whose limit never moves. Neither
// allocates.
type Limiter struct {
	inFlight atomic.Int64
	limit    atomic.Int64
	fixed    bool // the algorithm is Fixed: releases skip the update

	mu  sync.Mutex
	alg Algorithm
}

// New returns a Limiter that starts at the algorithm's initial limit.
func New(cfg Config) (*Limiter, error) {
	alg := cfg.Algorithm
	if alg == nil {
		g, err := NewGradient(GradientConfig{})
		if err != nil {
			return nil, err
		}
		alg = g
	}
	n := alg.Limit()
	if n < 1 {
		return nil, fmt.Errorf("%w: the algorithm's initial limit %d is below 1", ErrInvalidConfig, n)
	}
	l := &Limiter{alg: alg}
	_, l.fixed = alg.(Fixed)
	l.limit.Store(int64(n))
	return l, nil
}

// Acquire admits a request started at now if fewer than Limit() requests
// are in flight, and returns its token; otherwise it returns false at
// once, and the caller should refuse the request (503, RESOURCE_EXHAUSTED).
// An admitted request must be released exactly once, with its token's
// Served, Dropped or Ignore.
func (l *Limiter) Acquire(now time.Time) (Token, bool) {
	for {
		n := l.inFlight.Load()
		if n >= l.limit.Load() {
			return Token{}, false
		}
		if l.inFlight.CompareAndSwap(n, n+1) {
			return Token{l: l, start: now, inFlight: int(n + 1)}, true
		}
	}
}

// Limit returns the current limit: how many requests may be in flight at
// once. It is at least 1.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns how many admitted requests have not been released yet.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

// release ends a request and, unless ignore, feeds its sample to the
// algorithm.
func (l *Limiter) release(t Token, now time.Time, dropped, ignore bool) {
	l.inFlight.Add(-1)
	if ignore || l.fixed {
		return
	}
	s := Sample{RTT: now.Sub(t.start), InFlight: t.inFlight, Dropped: dropped, Now: now}
	l.mu.Lock()
	n := l.alg.Update(s)
	l.limit.Store(int64(max(n, 1)))
	l.mu.Unlock()
}

// Token is an admitted request: a small value, not a pointer, so
// acquiring one allocates nothing. Release it exactly once, with Served,
// Dropped or Ignore; releasing it twice makes the limiter's in-flight
// count wrong. The zero Token (from a refused Acquire) may be released:
// it does nothing.
type Token struct {
	l        *Limiter
	start    time.Time
	inFlight int
}

// Served releases a request that was served: now minus the acquire time
// is a latency sample for the algorithm.
func (t Token) Served(now time.Time) {
	if t.l != nil {
		t.l.release(t, now, false, false)
	}
}

// Dropped releases a request that was dropped or timed out: a sign of
// overload, which the algorithm answers by lowering the limit.
func (t Token) Dropped(now time.Time) {
	if t.l != nil {
		t.l.release(t, now, true, false)
	}
}

// Ignore releases a request whose end says nothing about the load (the
// client cancelled, the request failed before doing its work): the
// in-flight count falls and the algorithm sees no sample.
func (t Token) Ignore() {
	if t.l != nil {
		t.l.release(t, time.Time{}, false, true)
	}
}
