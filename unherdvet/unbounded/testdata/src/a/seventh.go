package a

import (
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
