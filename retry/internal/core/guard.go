package core

import "github.com/unherd/unherd/admission"

// contextGuards returns, for each of gs, the guard as a ContextGuard, or
// nil if it is not one; nil if none is.
func contextGuards(gs []admission.Guard) []admission.ContextGuard {
	var cgs []admission.ContextGuard
	for i, g := range gs {
		if cg, ok := g.(admission.ContextGuard); ok {
			if cgs == nil {
				cgs = make([]admission.ContextGuard, len(gs))
			}
			cgs[i] = cg
		}
	}
	return cgs
}

// maxStackGuards is how many guards' tickets a Call holds without
// allocating.
const maxStackGuards = 4
