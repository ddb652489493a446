//go:build !race

package main

// raceEnabled reports that the race detector is on, which slows the
// simulator about tenfold.
const raceEnabled = false
