// Package backoff stands for github.com/jpillora/backoff: a doubling
// delay that draws at random only when Jitter is set.
package backoff

import "time"

// Backoff is a time.Duration counter, starting at Min, multiplied by
// Factor after each call to Duration, up to Max.
type Backoff struct {
	Factor   float64
	Jitter   bool
	Min, Max time.Duration
	attempt  float64
}

// Duration returns the next delay.
func (b *Backoff) Duration() time.Duration {
	b.attempt++
	return b.Min * time.Duration(b.attempt)
}

// Reset restarts the counter.
func (b *Backoff) Reset() { b.attempt = 0 }
