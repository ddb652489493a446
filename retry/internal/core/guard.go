package core

import (
	"context"

	"github.com/unherd/unherd/admission"
)

// maxStackGuards is how many guards' tickets a Call or a Request holds
// without allocating.
const maxStackGuards = 4

// tickets holds the tickets of the guards that admitted an attempt or a
// request: in place for up to maxStackGuards guards, allocated beyond.
type tickets struct {
	small [maxStackGuards]uint64
	more  []uint64
}

// of returns room for the tickets of n guards, the same each time.
func (t *tickets) of(n int) []uint64 {
	if n <= len(t.small) {
		return t.small[:n]
	}
	if t.more == nil {
		t.more = make([]uint64, n)
	}
	return t.more
}

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

// rejectedBy is the reason and the cause of a rejection by a guard with
// err: ErrRejected and err; or, if ctx has ended, ErrCancelled and ctx's
// cause, since a guard that waits (a rate limiter) gave up because the
// caller did.
func rejectedBy(ctx context.Context, err error) (reason, cause error) {
	if ctx.Err() != nil {
		return ErrCancelled, context.Cause(ctx)
	}
	return ErrRejected, err
}

// tellGuards tells the guards gs, which admitted an attempt or a request
// with the tickets ts, how it ended.
func tellGuards(ctx context.Context, gs []admission.Guard, ts []uint64, o admission.Outcome) {
	for i, g := range gs {
		g.Done(ctx, ts[i], o)
	}
}
