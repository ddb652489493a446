//go:build race

package core

// raceEnabled is true under the race detector, where sync.Pool drops
// items at random and allocation counts say nothing.
const raceEnabled = true
