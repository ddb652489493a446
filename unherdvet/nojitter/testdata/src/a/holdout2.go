package a

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"time"
)

// Negative: an accept loop on the server's own listener backs off on
// temporary errors, as net/http does; it serves connections, it does
// not retry a dependency.
func acceptLoop(l net.Listener) {
	var tempDelay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(interface{ Temporary() bool }); ok && ne.Temporary() {
				if tempDelay == 0 {
					tempDelay = 5 * time.Millisecond
				} else {
					tempDelay *= 2
				}
				time.Sleep(tempDelay)
				continue
			}
			return
		}
		go serve(c)
	}
}

var pullWait = time.Second

// Positive: the loop only calls pullOnce, which makes the attempt, waits
// a fixed delay when it fails and returns; the loop calls it again.
func pullForever() {
	for {
		pullOnce(context.TODO())
	}
}

func pullOnce(ctx context.Context) {
	n, err := get(ctx)
	if err != nil {
		time.Sleep(pullWait) // want `nojitter: retry loop waits the same delay \(pullWait\)`
		return
	}
	_ = n
}

// Negative: the called function waits for a local lock file.
func lockForever() {
	for {
		lockOnce()
	}
}

func lockOnce() {
	f, err := os.OpenFile("lock", os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		time.Sleep(time.Second)
		return
	}
	_ = f.Close()
}

var pullInterval = func() time.Duration { return time.Duration(rand.N(10)) }

// Positive: on failure the pull loop sets the delay and goes back to the
// label at the top of its body, where it sleeps before the next try.
func pullLoop() {
	var wait time.Duration
	for {
	next:
		if wait > 0 {
			time.Sleep(wait) // want `nojitter: retry loop waits the same delay \(wait\)`
		}
		wait = pullInterval()
		if _, err := get(context.TODO()); err != nil {
			wait = 3 * time.Second
			goto next
		}
	}
}

// Negative: the failure path draws the delay at random, and the wait at
// the top of the next round takes it.
func pollJittered(ctx context.Context) {
	delay := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = pullInterval()
		if _, err := get(ctx); err != nil {
			delay = time.Second + rand.N(time.Second)
			continue
		}
	}
}

type connPolicy interface {
	Interval(n int) time.Duration
	Max() int
}

type fixedConnPolicy struct {
	every time.Duration
	max   int
}

func (p *fixedConnPolicy) Interval(int) time.Duration { return p.every }
func (p *fixedConnPolicy) Max() int                   { return p.max }

type expConnPolicy struct{ base time.Duration }

func (p *expConnPolicy) Interval(n int) time.Duration {
	d := p.base << n
	return d/2 + rand.N(d)
}
func (p *expConnPolicy) Max() int { return 5 }

type clusterConfig struct{ Reconnect connPolicy }

func newClusterConfig() *clusterConfig {
	return &clusterConfig{Reconnect: &fixedConnPolicy{every: time.Second, max: 3}}
}

// Positive: the wait comes through a policy interface; the package has a
// jittered implementation too, but the configuration's default, the only
// value the field is given, is the constant one.
func connectPool(cfg *clusterConfig) error {
	p := cfg.Reconnect
	var err error
	for i := 0; i < p.Max(); i++ {
		if _, err = dial("node"); err == nil {
			return nil
		}
		time.Sleep(p.Interval(i)) // want `nojitter: retry loop`
	}
	return err
}

type poolConfig struct{ Reconnect connPolicy }

var (
	defaultPool = poolConfig{Reconnect: &fixedConnPolicy{every: time.Second, max: 3}}
	widePool    = poolConfig{Reconnect: &expConnPolicy{base: time.Second}}
)

// Negative: the field is given the jittered policy too, so either may
// come.
func (cfg poolConfig) connect() (err error) {
	for i := range cfg.Reconnect.Max() {
		_, err = dial("node")
		if err == nil {
			break
		}
		time.Sleep(cfg.Reconnect.Interval(i))
	}
	return err
}

// result carries the error of the statement that made it, as an ORM's
// does.
type result struct {
	Error        error
	RowsAffected int64
}

type store struct{}

func (store) Create(ctx context.Context, v any) *result {
	_, err := get(ctx)
	return &result{Error: err}
}

// Positive: the error comes in a field of the result; the insert is
// tried again a constant second later.
func save(ctx context.Context, db store, v any) error {
	var res *result
	for range 5 {
		res = db.Create(ctx, v)
		if res.Error == nil {
			return nil
		}
		time.Sleep(time.Second) // want `nojitter: retry loop waits a constant 1s`
	}
	return res.Error
}
