package observecheck_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/unherd/unherd/internal/observecheck"
	"github.com/unherd/unherd/observe"
)

// counter counts events: the cheapest observer that does something.
type counter struct{ n atomic.Int64 }

func (c *counter) Observe(_ context.Context, e observe.Event) { c.n.Add(1) }

// BenchmarkObserver measures calls with and without an observer (see
// observecheck.BenchmarkCalls): the difference divided by the events is
// the cost of one event.
func BenchmarkObserver(b *testing.B) {
	observecheck.BenchmarkCalls(b, "counter", new(counter))
}
