// Package extlib stands for third-party packages a loop waits through: a
// backoff struct with a Jitter switch, and a timer that is not package
// time's.
package extlib

import "time"

// Backoff doubles from Min to Max; with Jitter set it draws at random.
type Backoff struct {
	Min, Max time.Duration
	Jitter   bool
	attempt  int
}

// Duration returns the next delay.
func (b *Backoff) Duration() time.Duration {
	b.attempt++
	return b.Min << b.attempt
}

// AfterSignal fires after d, or at once on a signal.
func AfterSignal(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	go func() { time.Sleep(d); close(ch) }()
	return ch
}

// Reset starts the doubling again.
func (b *Backoff) Reset() { b.attempt = 0 }
