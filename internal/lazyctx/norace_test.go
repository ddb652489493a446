//go:build !race

package lazyctx

const raceEnabled = false
