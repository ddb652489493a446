package await_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

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

func TestUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		if !await.Until(time.Second, 100*time.Millisecond, func() bool { calls++; return calls == 4 }) {
			t.Fatal("Until gave up on a condition that held at its fourth call")
		}
		if took := time.Since(start); took != 300*time.Millisecond {
			t.Errorf("Until returned after %v, want 300ms: the first call at once, then one every 100ms", took)
		}
		start = time.Now()
		if await.Until(time.Second, 300*time.Millisecond, func() bool { return false }) {
			t.Error("Until reported a condition that never held")
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Until gave up after %v, want its 1s limit", took)
		}
	})
}

func TestWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closed := make(chan struct{})
		close(closed)
		if !await.Within(closed) {
			t.Error("Within(a closed channel) = false")
		}
		start := time.Now()
		if await.Within(make(chan struct{})) {
			t.Error("Within(a channel nobody sends on) = true")
		}
		if took := time.Since(start); took != await.Timeout {
			t.Errorf("Within gave up after %v, want Timeout (%v)", took, await.Timeout)
		}
	})
}
