package a

import (
	"errors"
	"log"
	"net/http"
	"time"
)

type statusClient struct{ c *http.Client }

func (s *statusClient) leader() (string, error) {
	_, err := s.c.Get("http://consul/v1/status/leader")
	return "", err
}

func (s *statusClient) register() error {
	_, err := s.c.Get("http://consul/v1/agent/check/register")
	return err
}

// Positive: asked again until it answers with a leader, and nothing
// else ends it.
func awaitLeader(s *statusClient) string {
	for { // want `unbounded: retry loop has no attempt limit and no deadline`
		leader, err := s.leader()
		if err != nil {
			log.Print(err)
		} else if leader == "" {
			log.Print("no leader yet")
		} else {
			return leader
		}
		time.Sleep(10 * time.Second)
	}
}

// Negative: a goto back to a stop check: closing stop ends it.
func registerUntilStopped(s *statusClient, stop <-chan struct{}) {
AGAIN:
	select {
	case <-stop:
		return
	default:
	}
	if err := s.register(); err != nil {
		time.Sleep(10 * time.Second)
		goto AGAIN
	}
}

type joiner struct {
	c           *http.Client
	interval    time.Duration
	maxAttempts int // 0: no limit
}

func newJoiner(c *http.Client, max int) *joiner {
	return &joiner{c: c, interval: 30 * time.Second, maxAttempts: max}
}

func (j *joiner) join() error {
	_, err := j.c.Get("http://cluster/join")
	return err
}

// Positive: the only limit is an option that is off when zero, and the
// package never sets it: with the defaults the loop goes on for ever.
func (j *joiner) retryJoin() error {
	attempt := 0
	for { // want `unbounded: retry loop has no attempt limit and no deadline`
		if err := j.join(); err == nil {
			return nil
		}
		attempt++
		if j.maxAttempts > 0 && attempt > j.maxAttempts {
			return errors.New("join: attempts exhausted")
		}
		time.Sleep(j.interval)
	}
}

type boundedJoiner struct {
	joiner
	limit int
}

func newBoundedJoiner(c *http.Client) *boundedJoiner {
	return &boundedJoiner{joiner: joiner{c: c}, limit: 5}
}

// Negative: the same test on a limit the package sets to 5 by default.
func (j *boundedJoiner) retryJoin() error {
	attempt := 0
	for {
		if err := j.join(); err == nil {
			return nil
		}
		attempt++
		if j.limit > 0 && attempt > j.limit {
			return errors.New("join: attempts exhausted")
		}
		time.Sleep(j.interval)
	}
}

// Negative: a limit that is always on.
func (j *joiner) retryJoinCounted() error {
	for attempt := 0; ; attempt++ {
		if err := j.join(); err == nil {
			return nil
		}
		if attempt > j.maxAttempts {
			return errors.New("join: attempts exhausted")
		}
		time.Sleep(j.interval)
	}
}
