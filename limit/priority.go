package limit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Priority is how critical a request is. When the limiter is nearly
// full, lower priorities are refused first: [Critical] may fill the whole
// limit, [Normal] all but the critical reserve, [Sheddable] all but twice
// the reserve (see Config.CriticalShare). The zero value is Normal.
type Priority uint8

const (
	// Normal is an ordinary request, the zero value.
	Normal Priority = iota
	// Critical is a request the server keeps a share of its limit for:
	// one whose failure a user sees at once, or that keeps the system
	// itself running (health checks, control traffic).
	Critical
	// Sheddable is a request that may be refused first: prefetches,
	// batch work, retries of optional calls. A Priority other than
	// Critical and Normal is treated as Sheddable.
	Sheddable
)

// PriorityHeader is the request header in which a client may state its
// request's priority, as ParsePriority reads it ("critical", "normal",
// "sheddable"). A server should take it as it is only from callers it
// trusts; from others it should cap it, for instance letting an
// untrusted caller lower its priority to Sheddable but never raise it to
// Critical, or every caller will soon send "critical".
const PriorityHeader = "Unherd-Priority"

// ErrInvalidPriority is wrapped by the error ParsePriority returns for a
// string that names no priority.
var ErrInvalidPriority = errors.New("limit: invalid priority")

// String returns "normal", "critical" or "sheddable", the names
// ParsePriority reads, or "Priority(n)" for another value.
func (p Priority) String() string {
	switch p {
	case Normal:
		return "normal"
	case Critical:
		return "critical"
	case Sheddable:
		return "sheddable"
	}
	return "Priority(" + strconv.Itoa(int(p)) + ")"
}

// ParsePriority reads a priority's name, as String writes it, ignoring
// case and surrounding spaces. Any other string is an error wrapping
// ErrInvalidPriority.
func ParsePriority(s string) (Priority, error) {
	t := strings.TrimSpace(s)
	switch {
	case strings.EqualFold(t, "normal"):
		return Normal, nil
	case strings.EqualFold(t, "critical"):
		return Critical, nil
	case strings.EqualFold(t, "sheddable"):
		return Sheddable, nil
	}
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return Normal, fmt.Errorf("%w: %q (want critical, normal or sheddable)", ErrInvalidPriority, s)
}

// rank orders the priorities for the queue: 0 is served first.
func (p Priority) rank() int {
	switch p {
	case Critical:
		return 0
	case Normal:
		return 1
	}
	return 2
}

type priorityKey struct{}

// WithPriority returns a copy of ctx that carries p, for
// PriorityFromContext: a server's middleware sets it from the request,
// and the limiter's [Limiter.Guard] reads it for a client's calls.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFromContext returns the priority WithPriority put in ctx, or
// Normal if there is none.
func PriorityFromContext(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}
