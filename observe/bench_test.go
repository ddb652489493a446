package observe_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/observe/observetest"
)

// counter counts events: the cheapest observer that does something.
type counter struct{ n atomic.Int64 }

func (c *counter) Observe(_ context.Context, e observe.Event) { c.n.Add(1) }

// BenchmarkRetryObserver measures retry.Do with and without an observer:
// a first-attempt success (2 events: Attempt, Success) and a call that
// fails twice with zero delays (6 events: 3 Attempt, 2 Retry, Success).
// The difference divided by the events is the cost of one event.
func BenchmarkRetryObserver(b *testing.B) {
	observetest.BenchmarkRetry(b, "counter", new(counter))
}
