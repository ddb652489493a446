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

// Negative: the same with a jittered wait.
func pullForeverJitter() {
	for {
		pullOnceJitter(context.TODO())
	}
}

func pullOnceJitter(ctx context.Context) {
	n, err := get(ctx)
	if err != nil {
		time.Sleep(pullWait/2 + rand.N(pullWait))
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
func pullLoop(done chan struct{}) {
	var wait time.Duration
	for {
	next:
		select {
		case <-done:
			return
		default:
		}
		if wait > 0 {
			time.Sleep(wait) // want `nojitter: retry loop waits the same delay \(wait\)`
		}
		wait = pullInterval()
		n, err := get(context.TODO())
		if err != nil {
			wait = 3 * time.Second
			goto next
		}
		_ = n
	}
}

// Negative: the same, with a jittered delay on failure.
func pullLoopJitter(done chan struct{}) {
	var wait time.Duration
	for {
	next:
		select {
		case <-done:
			return
		default:
		}
		if wait > 0 {
			time.Sleep(wait)
		}
		wait = pullInterval()
		n, err := get(context.TODO())
		if err != nil {
			wait = time.Second + rand.N(time.Second)
			goto next
		}
		_ = n
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

type jitteredConfig struct{ Reconnect connPolicy }

func newJitteredConfig() *jitteredConfig {
	return &jitteredConfig{Reconnect: &expConnPolicy{base: time.Second}}
}

// Negative: the same, where the default is the jittered policy.
func connectPoolJitter(cfg *jitteredConfig) error {
	p := cfg.Reconnect
	var err error
	for i := 0; i < p.Max(); i++ {
		if _, err = dial("node"); err == nil {
			return nil
		}
		time.Sleep(p.Interval(i))
	}
	return err
}

// Negative: a policy the caller passes in, which the package does not
// show: any implementation may come.
func connectWith(p connPolicy) error {
	var err error
	for i := 0; i < p.Max(); i++ {
		if _, err = dial("node"); err == nil {
			return nil
		}
		time.Sleep(p.Interval(i))
	}
	return err
}
