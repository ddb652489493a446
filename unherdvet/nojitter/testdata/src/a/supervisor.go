package a

import (
	"errors"
	"net/http"
	"time"

	"example.com/transportlib"
	"github.com/jpillora/backoff"
)

// brokerClient stands for a connection to a message broker.
type brokerClient struct{ c *http.Client }

func (b *brokerClient) Close() error { return nil }

type supervised struct {
	c       *http.Client
	dying   chan struct{}
	backoff *backoff.Backoff
}

func newSupervised(c *http.Client) *supervised {
	s := &supervised{c: c, dying: make(chan struct{})}
	s.backoff = &backoff.Backoff{Min: 50 * time.Millisecond, Max: 10 * time.Second, Factor: 2}
	return s
}

// connect answers nil when the broker cannot be reached, and whether a
// session was resumed.
func (s *supervised) connect(kill chan struct{}) (*brokerClient, bool) {
	if _, err := s.c.Get("http://broker/connect"); err != nil {
		return nil, false
	}
	return &brokerClient{s.c}, true
}

func (s *supervised) serve(c *brokerClient, kill chan struct{}) bool { return false }

var errDying = errors.New("dying")

// Positive: a supervisor that connects again after a failure (a nil
// client) or a lost session, waiting under "not the first round" at the
// top a delay from a backoff whose Jitter is left false.
func (s *supervised) supervise() error {
	first := true
	for {
		if !first {
			d := s.backoff.Duration()
			select {
			case <-time.After(d): // want `nojitter: retry loop's delay grows without jitter`
			case <-s.dying:
				return errDying
			}
		}
		first = false
		kill := make(chan struct{})
		client, _ := s.connect(kill)
		if client == nil {
			continue
		}
		dying := s.serve(client, kill)
		_ = client.Close()
		if dying {
			return errDying
		}
	}
}

type jitteredSupervised struct {
	supervised
	jb *backoff.Backoff
}

func newJitteredSupervised(c *http.Client) *jitteredSupervised {
	s := &jitteredSupervised{supervised: supervised{c: c}}
	s.jb = &backoff.Backoff{Min: 50 * time.Millisecond, Max: 10 * time.Second, Factor: 2, Jitter: true}
	return s
}

// Negative: the same supervisor, its backoff's Jitter set.
func (s *jitteredSupervised) supervise() error {
	first := true
	for {
		if !first {
			select {
			case <-time.After(s.jb.Duration()):
			case <-s.dying:
				return errDying
			}
		}
		first = false
		client, _ := s.connect(nil)
		if client == nil {
			continue
		}
		_ = s.serve(client, nil)
		_ = client.Close()
	}
}

// brokerSession stands for a client whose Connect dials through a third
// party's transport.
type brokerSession struct{ conn transportlib.Conn }

func (s *brokerSession) Connect(url string) error {
	c, err := transportlib.Dial(url)
	if err != nil {
		return err
	}
	s.conn = c
	return nil
}

type dialSupervisor struct {
	url   string
	pause time.Duration
}

// open answers nil when the connection cannot be made.
func (d *dialSupervisor) open() *brokerSession {
	s := &brokerSession{}
	if err := s.Connect(d.url); err != nil {
		return nil
	}
	return s
}

// Positive: the supervisor shape again, its attempt reaching the broker
// only through the third party's Dial, two calls down.
func (d *dialSupervisor) run(stop <-chan struct{}) {
	first := true
	for {
		if !first {
			select {
			case <-time.After(d.pause): // want `nojitter: retry loop waits the same delay \(d.pause\) between every attempt`
			case <-stop:
				return
			}
		}
		first = false
		s := d.open()
		if s == nil {
			continue
		}
		<-stop
		_ = s.conn.Close()
		return
	}
}
