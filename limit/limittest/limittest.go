// Package limittest helps test code that drives a limit.Limiter, such as
// server middleware: Recorder is an Algorithm with a fixed limit that
// keeps every sample its limiter reports, so a test can check how each
// request was released (Served, Dropped, or not at all for Ignore).
package limittest

import (
	"sync"

	"github.com/unherd/unherd/limit"
)

// Recorder is a limit.Algorithm whose limit is N and never moves, and
// which records the samples it is given. It is safe for concurrent use;
// give each Limiter its own.
type Recorder struct {
	// N is the limit.
	N int

	mu      sync.Mutex
	samples []limit.Sample
}

// Limit returns N.
func (r *Recorder) Limit() int { return r.N }

// Update records s and returns N.
func (r *Recorder) Update(s limit.Sample) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
	return r.N
}

// Samples returns a copy of the samples recorded so far, in the order
// they came.
func (r *Recorder) Samples() []limit.Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]limit.Sample(nil), r.samples...)
}
