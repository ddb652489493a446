//go:build race

package lazyctx

// raceEnabled is true under the race detector, where allocation counts
// say nothing.
const raceEnabled = true
