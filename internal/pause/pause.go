// Package pause waits for a duration or until a context ends, whichever
// comes first: the wait of the packages that pause outside a retry loop
// (chaos's injected latency, the rate limiter's wait for a send token, a
// fleet budget's gap between syncs, the overload harness's pacing). The
// retry loop has its own wait, which reuses one timer across a call's
// retries.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx ends, and reports whether the whole of d
// passed. A d of zero or less does not wait: For then reports whether
// ctx is still live.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
