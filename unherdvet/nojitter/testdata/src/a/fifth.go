package a

import (
	"log"
	"net"
	"time"
)

type watcher struct {
	addr   string
	stop   chan struct{}
	closed bool
}

// session dials the watched service and serves the connection until it
// fails.
func (w *watcher) session() error {
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Read(make([]byte, 1))
	return err
}

// Positive: the failure path only waits and falls through to a check of
// the stop channel; the session starts again a constant second later.
func (w *watcher) run() {
	for {
		if err := w.session(); err != nil {
			log.Print(err)
			time.Sleep(time.Second) // want `nojitter: retry loop waits a constant 1s between attempts`
		}
		select {
		case <-w.stop:
			return
		default:
		}
	}
}

// Positive: the same with a flag checked after the failure path.
func (w *watcher) runFlag() {
	for {
		if err := w.session(); err != nil {
			time.Sleep(2 * time.Second) // want `nojitter: retry loop waits a constant 2s between attempts`
		}
		if w.closed {
			return
		}
	}
}

// Negative: periodic work: it waits on both paths, so a failure is no
// more than a skipped round.
func (w *watcher) poll() {
	for {
		if err := w.session(); err != nil {
			log.Print(err)
		}
		select {
		case <-w.stop:
			return
		case <-time.After(time.Minute):
		}
	}
}

// Negative: after the failure path the loop does more work, not only a
// check of whether it was stopped.
func (w *watcher) runAndReport() {
	for {
		if err := w.session(); err != nil {
			time.Sleep(time.Second)
		}
		log.Print("session over")
		if w.closed {
			return
		}
	}
}
