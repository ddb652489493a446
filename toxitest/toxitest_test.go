package toxitest_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/toxitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo starts a TCP server that writes back every line it reads, and
// returns its address.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		l.Close()
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			t.Error("the echo server's accept loop did not end within 10 s of its listener closing")
		}
	})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

// roundTrip dials addr, sends a line and reads it back, returning how
// long that took.
func roundTrip(addr string) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "ping\n" {
		return 0, errors.New("echo sent back " + line)
	}
	return time.Since(start), nil
}

func TestProxy(t *testing.T) {
	p := toxitest.New(t, echo(t))
	if _, err := roundTrip(p.Addr); err != nil {
		t.Fatalf("through a clean proxy: %v", err)
	}

	undo := p.Latency(t, 50*time.Millisecond, 0)
	// A lower bound only: the toxic never makes the trip faster.
	if d, err := roundTrip(p.Addr); err != nil || d < 50*time.Millisecond {
		t.Errorf("with 50ms latency: %v, %v; want at least 50ms", d, err)
	}
	undo()

	undo = p.ResetPeer(t, 0)
	if _, err := roundTrip(p.Addr); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("with reset_peer: %v, want a reset", err)
	}
	undo()

	undo = p.Timeout(t, 100*time.Millisecond)
	if d, err := roundTrip(p.Addr); err == nil || d > time.Second {
		t.Errorf("with a 100ms timeout toxic: %v after %v, want the connection closed", err, d)
	}
	undo()

	undo = p.Bandwidth(t, 1)
	if _, err := roundTrip(p.Addr); err != nil {
		t.Errorf("with 1 KB/s: %v", err)
	}
	undo()

	up := p.Down(t)
	if _, err := roundTrip(p.Addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("with the proxy down: %v, want connection refused", err)
	}
	up()
	if _, err := roundTrip(p.Addr); err != nil {
		t.Errorf("after up: %v", err)
	}
}
