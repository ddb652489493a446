// Package draws is the random source every configurable part of the
// module defaults to: a Config's Rand if it has one, else math/rand/v2's
// global source, safe for concurrent use.
package draws

import "math/rand/v2"

// From returns src's Uint64, or math/rand/v2's Uint64 when src is nil.
func From(src rand.Source) func() uint64 {
	if src == nil {
		return rand.Uint64
	}
	return src.Uint64
}
