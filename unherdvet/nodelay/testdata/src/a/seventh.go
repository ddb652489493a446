package a

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"time"
)

type binlogStream struct{ c *http.Client }

func (s *binlogStream) resync(ctx context.Context) error {
	_, err := s.c.Get("http://db/resync")
	return err
}

// Negative: the wait is the timer case of the select whose body makes
// the attempt; a failure goes round to that wait, so it is not immediate.
func resyncAfterTimer(ctx context.Context, s *binlogStream) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
			if err := s.resync(ctx); err != nil {
				log.Print(err)
				continue
			}
		}
		break
	}
}

var errReconnect = errors.New("reconnect")

type chatClient struct{ addr string }

// session dials, serves the connection until it is lost, and asks to be
// called again then.
func (c *chatClient) session() error {
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	buf := make([]byte, 512)
	for {
		if _, err := conn.Read(buf); err != nil {
			return errReconnect
		}
	}
}

// Positive: the connection made again at once whenever it is lost: a
// switch on the error goes round on a sentinel and returns otherwise.
func (c *chatClient) connectSwitch() error {
	for { // want `nodelay: retry loop tries again at once`
		err := c.session()
		switch err {
		case errReconnect:
			continue
		default:
			return err
		}
	}
}

// Positive: the same with errors.Is.
func (c *chatClient) connectIs() error {
	for { // want `nodelay: retry loop tries again at once`
		err := c.session()
		if errors.Is(err, errReconnect) {
			continue
		}
		return err
	}
}

// Negative: the same with a wait before going round.
func (c *chatClient) connectWaiting(ctx context.Context) error {
	for {
		err := c.session()
		switch err {
		case errReconnect:
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
			continue
		default:
			return err
		}
	}
}

// Negative: a switch on a local parse's sentinel: nothing remote.
func parseAll(lines []string, parse func(string) error) error {
	for i := 0; ; i++ {
		err := parse(lines[i%len(lines)])
		switch err {
		case errReconnect:
			continue
		default:
			return err
		}
	}
}

type sqlConn struct{ c net.Conn }

func (c *sqlConn) exec(ctx context.Context, q string) error {
	_, err := c.c.Write([]byte(q))
	return err
}

var errBadConn = errors.New("bad connection")

type replicator struct {
	addr string
	conn *sqlConn
}

func (r *replicator) connect() (*sqlConn, error) {
	c, err := net.Dial("tcp", r.addr)
	return &sqlConn{c}, err
}

// Negative: a statement sent again on a new connection after the old
// one turned out dead; a connect that fails returns, so a service that
// is down is not called again (database/sql's driver.ErrBadConn rule).
func (r *replicator) execute(ctx context.Context, q string) error {
	var err error
	for range 3 {
		if r.conn == nil {
			r.conn, err = r.connect()
			if err != nil {
				return err
			}
		}
		err = r.conn.exec(ctx, q)
		if err != nil {
			if errors.Is(err, errBadConn) {
				r.conn = nil
				continue
			}
			return err
		}
		break
	}
	return err
}

// Positive: the same, but a failed connect goes round too: a service
// that is down is dialled again at once.
func (r *replicator) executeRedial(ctx context.Context, q string) error {
	var err error
	for range 3 { // want `nodelay: retry loop tries again at once`
		if r.conn == nil {
			r.conn, err = r.connect()
			if err != nil {
				continue
			}
		}
		err = r.conn.exec(ctx, q)
		if err != nil {
			r.conn = nil
			continue
		}
		break
	}
	return err
}

var errGroupStale = errors.New("group stale")

type group struct{ c *http.Client }

func (g *group) register(ctx context.Context, name string) error {
	_, err := g.c.Get("http://registry/" + name)
	return err
}

type groups struct{ c *http.Client }

func (gs *groups) getOrCreate(name string) *group { return &group{gs.c} }

// Negative: a stale group looked up again: each round registers with
// the group the registry holds now, not the same call again.
func (gs *groups) register(ctx context.Context, name string) error {
	for {
		g := gs.getOrCreate(name)
		err := g.register(ctx, name)
		if err == errGroupStale {
			continue
		}
		return err
	}
}
