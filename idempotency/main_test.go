package idempotency_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The middleware's lease renewals run on timers; none may outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
