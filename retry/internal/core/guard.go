package core

import (
	"context"

	"github.com/unherd/unherd/admission"
)

// maxStackGuards is how many guards' tickets a Call holds without
// allocating.
const maxStackGuards = 4

// admitGuards asks the guards gs in order to admit an attempt or a
// request, keeping their tickets in ts. If one rejects it, admitGuards
// returns how many had admitted it and the rejection.
func admitGuards(ctx context.Context, gs []admission.Guard, ts []uint64) (n int, err error) {
	for n = range gs {
		if ts[n], err = gs[n].Admit(ctx); err != nil {
			return
		}
	}
	return len(gs), nil
}

// tellGuards tells the guards gs, which admitted an attempt or a request
// with the tickets ts, how it ended.
func tellGuards(ctx context.Context, gs []admission.Guard, ts []uint64, o admission.Outcome) {
	for i, g := range gs {
		g.Done(ctx, ts[i], o)
	}
}
