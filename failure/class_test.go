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

func TestOfHTTPStatus(t *testing.T) {
	for code, want := range map[int]struct {
		c      failure.Class
		failed bool
	}{
		200: {failure.Transient, false}, 304: {failure.Transient, false},
		400: {failure.Permanent, true}, 404: {failure.Permanent, true}, 408: {failure.Transient, true},
		429: {failure.Throttled, true}, 500: {failure.Transient, true}, 501: {failure.Permanent, true},
		502: {failure.Transient, true}, 503: {failure.Throttled, true}, 504: {failure.Transient, true},
		505: {failure.Transient, true}, 520: {failure.Transient, true},
	} {
		if c, failed := failure.OfHTTPStatus(code); c != want.c || failed != want.failed {
			t.Errorf("OfHTTPStatus(%d) = %v, %v; want %v, %v", code, c, failed, want.c, want.failed)
		}
	}
}
