// Package seeded gives tests a seeded random source that goroutines can
// share, for the Rand fields of retry, hedge and fleet configurations.
package seeded

import (
	"math/rand/v2"
	"sync"
)

// Source is a PCG source behind a lock: safe for concurrent use, and the
// same sequence for the same seeds.
type Source struct {
	mu  sync.Mutex
	src *rand.PCG
}

// New returns a Source seeded with seed1 and seed2.
func New(seed1, seed2 uint64) *Source { return &Source{src: rand.NewPCG(seed1, seed2)} }

// Uint64 returns the next number of the sequence.
func (s *Source) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}
