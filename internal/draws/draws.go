// Package draws holds the module's random sources: the one every
// configurable part defaults to (a Config's Rand if it has one, else
// math/rand/v2's global source, safe for concurrent use), and a seeded
// source that goroutines can share, for tests and simulations.
package draws

import (
	"math/rand/v2"
	"sync"
)

// From returns src's Uint64, or math/rand/v2's Uint64 when src is nil.
func From(src rand.Source) func() uint64 {
	if src == nil {
		return rand.Uint64
	}
	return src.Uint64
}

// Seeded is a PCG source behind a lock: safe for concurrent use, and the
// same sequence for the same seeds. Tests give it to the Rand fields of
// retry, hedge and fleet configurations.
type Seeded struct {
	mu  sync.Mutex
	src *rand.PCG
}

// NewSeeded returns a Seeded source seeded with seed1 and seed2.
func NewSeeded(seed1, seed2 uint64) *Seeded { return &Seeded{src: rand.NewPCG(seed1, seed2)} }

// Uint64 returns the next number of the sequence.
func (s *Seeded) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}
