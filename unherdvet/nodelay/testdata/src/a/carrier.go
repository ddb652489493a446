package a

import (
	"context"
	"log"
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
