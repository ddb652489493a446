//go:build !race

package hedge

const raceEnabled = false
