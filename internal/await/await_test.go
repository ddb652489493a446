package await_test

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/unherd/unherd/internal/await"
)

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := await.Recv(t, ch, "a buffered value"); got != 7 {
		t.Errorf("Recv = %d, want 7", got)
	}
	close(ch)
	if got := await.Recv(t, ch, "a closed channel"); got != 0 {
		t.Errorf("Recv on a closed channel = %d, want 0", got)
	}
}

// fatalT records Fatalf instead of stopping the test.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func TestRecvTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fatalT{TB: t}
		func() {
			defer func() {
				if r := recover(); r != f {
					t.Fatalf("recovered %v, want the test's Fatalf", r)
				}
			}()
			await.Recv(f, make(chan struct{}), "nothing")
		}()
		if !strings.HasPrefix(f.msg, "waited %v for %s") {
			t.Errorf("Fatalf format %q", f.msg)
		}
	})
}
