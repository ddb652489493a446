// Package hedgetest makes the Hedger the integrations' hedging tests use.
package hedgetest

import (
	"testing"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/configtest"
)

// Always returns a Hedger that hedges every request after delay: no
// budget, and never suspended for losing.
func Always(t testing.TB, delay time.Duration) *hedge.Hedger {
	t.Helper()
	return configtest.Must(hedge.New(hedge.Config{Delay: delay, Budget: budget.Unlimited, MinWinShare: -1}))(t)
}
