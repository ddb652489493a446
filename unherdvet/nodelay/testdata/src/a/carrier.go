package a

import (
	"context"
	"log"
	"time"
)

// iter carries the error of the query that made it.
type iter struct {
	rows []int
	err  error
}

type conn struct{}

func (conn) query(ctx context.Context, stmt string) *iter {
	n, err := fetch(ctx, stmt)
	return &iter{rows: []int{n}, err: err}
}

type control struct {
	c     conn
	debug bool
}

func (c *control) withConn(fn func(conn) *iter) *iter { return fn(c.c) }

// Positive: the query's error comes in a field of its result; a debug
// note is written on failure, and the query goes again at once, three
// times.
func (c *control) query(stmt string) (it *iter) {
	for attempt := 0; attempt < 3; attempt++ { // want `nodelay: retry loop tries again at once`
		it = c.withConn(func(cn conn) *iter {
			return cn.query(context.TODO(), stmt)
		})
		if c.debug && it.err != nil {
			log.Printf("query %q: %v", stmt, it.err)
		}
		if it.err == nil {
			break
		}
	}
	return it
}

// Negative: the debug note is the only thing done with the error; the
// loop goes on to the next statement whatever happens.
func (c *control) each(stmts []string) {
	for _, s := range stmts {
		it := c.withConn(func(cn conn) *iter { return cn.query(context.TODO(), s) })
		if c.debug && it.err != nil {
			log.Printf("query %q: %v", s, it.err)
		}
	}
}

// Negative: each try goes to the next server of the list, taken into a
// variable before the call.
func failoverRotating(ctx context.Context, servers []string) (int, error) {
	var err error
	index := 0
	for i := 1; i <= len(servers); i++ {
		cur := servers[index]
		var n int
		n, err = fetchFrom(ctx, cur)
		if err == nil {
			return n, nil
		}
		index = (index + i) % len(servers)
	}
	return 0, err
}

func fetchFrom(ctx context.Context, addr string) (int, error) { return 0, nil }

type syncer interface {
	OnFailedSync(err error) (time.Duration, error)
}

type defaultSyncer struct{}

func (defaultSyncer) OnFailedSync(err error) (time.Duration, error) { return 10 * time.Second, nil }

// Negative: the failure path waits inside a closure it calls.
func syncLoop(ctx context.Context, s syncer) error {
	onError := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d, err := s.OnFailedSync(err)
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	for {
		n, err := fetchFrom(ctx, "sync")
		if err != nil {
			if err = onError(err); err != nil {
				return err
			}
			continue
		}
		_ = n
	}
}
