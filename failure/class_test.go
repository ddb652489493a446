package failure_test

import (
	"testing"

	"github.com/unherd/unherd/failure"
)

func TestClassString(t *testing.T) {
	for c, want := range map[failure.Class]string{
		failure.Transient: "transient",
		failure.Timeout:   "timeout",
		failure.Throttled: "throttled",
		failure.Permanent: "permanent",
		failure.Class(9):  "unknown",
	} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String() = %q, want %q", c, got, want)
		}
	}
}
