package retry

import "context"

// Guard is consulted before every attempt and told how it ended: a circuit
// breaker, a client-side throttle, a rate limiter. Guards run inside the
// retry loop, so they see every attempt, retries included (DESIGN order:
// caller's deadline, retry loop, guards, attempt).
//
// Admit asks to start an attempt. It may wait (a rate limiter), honouring
// ctx. A non-nil error rejects the attempt locally: the loop stops at once
// with ErrRejected, wrapping that error, and never retries a local
// rejection. An admitted attempt gets a ticket, which the loop hands back
// to Done, with the attempt's outcome, exactly once; a breaker can keep a
// generation in it so that results from before a state change are ignored.
//
// Implementations must be safe for concurrent use.
type Guard interface {
	Admit(ctx context.Context) (ticket uint64, err error)
	Done(ticket uint64, o Outcome)
}

// Outcome is how an admitted attempt ended, as a Guard sees it.
type Outcome struct {
	// Err is the attempt's error, nil on success.
	Err error
	// Class is how Err was classified; meaningful only when Err != nil.
	Class Class
	// Abandoned is true when the attempt did not run to a result that says
	// anything about the dependency: the caller's context ended during it,
	// or a later guard rejected it before it started. A guard should
	// release what it reserved without counting a success or a failure.
	Abandoned bool
}

// maxStackGuards is how many guards' tickets fit on the stack.
const maxStackGuards = 4

// guarded runs one attempt through the guards: admit, run, report. A
// failed attempt is classified once, into f, for the guards' report and
// for the retry decision after it.
func guarded[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), f *failure) (v T, err, rejection error) {
	var buf [maxStackGuards]uint64
	tickets := buf[:0]
	if len(p.guards) > maxStackGuards {
		tickets = make([]uint64, 0, len(p.guards))
	}
	for i, g := range p.guards {
		t, rerr := g.Admit(ctx)
		if rerr != nil {
			for j := range i {
				p.guards[j].Done(tickets[j], Outcome{Abandoned: true})
			}
			return v, nil, rerr
		}
		tickets = append(tickets, t)
	}
	// If fn panics and a caller up the stack recovers, the guards must
	// still hear of the attempt, or a half-open breaker would keep its
	// probe slot forever.
	reported := false
	defer func() {
		if !reported {
			for i, g := range p.guards {
				g.Done(tickets[i], Outcome{Abandoned: true})
			}
		}
	}()
	v, err = runAttempt(ctx, p, fn)
	o := Outcome{Err: err}
	if err != nil {
		// The caller gave up, or something further down rejected the call
		// locally: neither says anything about the dependency. (A caller
		// who gave up also stops the decision before it classifies.)
		if ctx.Err() != nil {
			o.Abandoned = true
		} else if m := inspect(err); m.rejected {
			o.Abandoned = true // the decision finds it again, and stops
		} else {
			*f = p.failureOf(&m, err)
			o.Class = f.class
		}
	}
	reported = true
	for i, g := range p.guards {
		g.Done(tickets[i], o)
	}
	return v, err, nil
}
