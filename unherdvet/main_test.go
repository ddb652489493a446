package unherdvet_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Check analyzes packages in parallel; every goroutine must be done when
// it returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
