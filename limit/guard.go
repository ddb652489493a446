package limit

import (
	"context"
	"time"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/failure"
)

// Guard returns a [admission.Guard] that bounds the attempts a client has in
// flight to one dependency with this limiter: put it in
// retry.Config.Guards. Admit is Wait with the priority PriorityFromContext
// finds in the attempt's context (Normal if none), so it waits in the
// queue if Config.MaxWait allows; its refusal, ErrLimited or a
// [*WaitError], is a local rejection that the retry loop never retries.
// Done releases the attempt: Served on a success, Dropped on a Timeout
// or Throttled failure (the dependency's overload), Ignore when the
// attempt was abandoned or failed otherwise (Transient or Permanent: no
// sign of the dependency's load, nor a latency worth learning). The
// guard reads the real clock, and neither Admit nor Done allocates when
// a slot is free.
func (l *Limiter) Guard() admission.Guard { return &guard{l: l, base: Now()} }

type guard struct {
	l    *Limiter
	base time.Time // tickets count microseconds from it
}

// A ticket is a token without its limiter: the in-flight count at
// admission in the top 16 bits (saturated), the start in microseconds
// since the guard's base in the low 48 bits (about 8.9 years).
const (
	ticketStartBits = 48
	ticketStartMask = 1<<ticketStartBits - 1
	ticketMaxCount  = 1<<(64-ticketStartBits) - 1
)

func (g *guard) Admit(ctx context.Context) (uint64, error) {
	tok, err := g.l.Wait(ctx, PriorityFromContext(ctx))
	if err != nil {
		return 0, err
	}
	us := max(int64(tok.start.Sub(g.base)/time.Microsecond), 0)
	n := uint64(min(max(tok.inFlight, 0), ticketMaxCount))
	return n<<ticketStartBits | uint64(us)&ticketStartMask, nil
}

func (g *guard) Done(_ context.Context, ticket uint64, o admission.Outcome) {
	tok := Token{
		l:        g.l,
		start:    g.base.Add(time.Duration(ticket&ticketStartMask) * time.Microsecond),
		inFlight: int(ticket >> ticketStartBits),
	}
	switch {
	case o.Abandoned:
		tok.Ignore()
	case o.Err == nil:
		tok.Served(Now())
	case o.Class == failure.Timeout || o.Class == failure.Throttled:
		tok.Dropped(Now())
	default:
		tok.Ignore()
	}
}
