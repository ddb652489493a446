package a

import (
	"context"
	"log"
	"math/rand/v2"
	"net/http"
	"time"
)

// streamer stands for a client whose calls go to another service.
type streamer struct{ c *http.Client }

func (s *streamer) resync(ctx context.Context) error {
	_, err := s.c.Get("http://db/resync")
	return err
}
func (s *streamer) leader() (string, error)          { return "", nil }
func (s *streamer) register() error                  { return nil }
func (s *streamer) join(addrs []string) (int, error) { return 0, nil }

// Positive: the wait is the timer case of a select, and the case's body
// makes the attempt; a failure goes round to the same wait.
func resyncInCase(ctx context.Context, s *streamer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second): // want `nojitter: retry loop waits a constant 1s between attempts`
			if err := s.resync(ctx); err != nil {
				log.Print(err)
				continue
			}
		}
		break
	}
}

// Negative: the same with a jittered wait.
func resyncInCaseJittered(ctx context.Context, s *streamer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second/2 + rand.N(time.Second)):
			if err := s.resync(ctx); err != nil {
				log.Print(err)
				continue
			}
		}
		break
	}
}

// Positive: the attempt inside an if that only guards it, the error
// declared inside; a failure falls through to the wait.
func joinGuarded(s *streamer, addrs []string) error {
	attempt := 0
	for {
		if len(addrs) > 0 {
			_, err := s.join(addrs)
			if err == nil {
				return nil
			}
			log.Print(err)
		}
		attempt++
		log.Printf("join failed, attempt %d", attempt)
		time.Sleep(30 * time.Second) // want `nojitter: retry loop waits a constant 30s between attempts`
	}
}

// Negative: the same guard around work that returns on its error and
// waits only after a success: periodic work, not a retry.
func joinPeriodic(s *streamer, addrs []string) error {
	for {
		if len(addrs) > 0 {
			if _, err := s.join(addrs); err != nil {
				return err
			}
		}
		time.Sleep(30 * time.Second)
	}
}

// Negative: the guarded retry with a jittered wait.
func joinGuardedJittered(s *streamer, addrs []string) error {
	for {
		if len(addrs) > 0 {
			_, err := s.join(addrs)
			if err == nil {
				return nil
			}
		}
		time.Sleep(20*time.Second + rand.N(20*time.Second))
	}
}

// Positive: a goto back to a label that stands on a stop check, not on
// the attempt.
func registerAgain(s *streamer, stop <-chan struct{}) {
REGISTER:
	select {
	case <-stop:
		return
	default:
	}
	if err := s.register(); err != nil {
		log.Print(err)
		time.Sleep(10 * time.Second) // want `nojitter: retry loop waits a constant 10s between attempts`
		goto REGISTER
	}
	log.Print("registered")
}

// Negative: the same with a jittered wait.
func registerAgainJittered(s *streamer, stop <-chan struct{}) {
REGISTER:
	select {
	case <-stop:
		return
	default:
	}
	if err := s.register(); err != nil {
		time.Sleep(5*time.Second + rand.N(10*time.Second))
		goto REGISTER
	}
}

// Negative: a label on a select that a break leaves: no goto, no loop.
func drainOnce(s *streamer, ch <-chan int) {
OUT:
	select {
	case <-ch:
		break OUT
	default:
	}
	if err := s.register(); err != nil {
		time.Sleep(time.Second)
	}
}

// Positive: the success needs an answer as well as no error, in an
// else-if chain before a trailing wait.
func awaitLeader(s *streamer) string {
	for {
		leader, err := s.leader()
		if err != nil {
			log.Print(err)
		} else if leader == "" {
			log.Print("no leader yet")
		} else {
			return leader
		}
		time.Sleep(10 * time.Second) // want `nojitter: retry loop waits a constant 10s between attempts`
	}
}

// Positive: the same success as one condition.
func awaitLeaderAnd(s *streamer) string {
	var leader string
	for {
		var err error
		leader, err = s.leader()
		if err == nil && leader != "" {
			break
		}
		time.Sleep(10 * time.Second) // want `nojitter: retry loop waits a constant 10s between attempts`
	}
	return leader
}

// Negative: a poll that gives up on an error and waits only while the
// answer is not there yet.
func pollLeader(s *streamer) (string, error) {
	for {
		leader, err := s.leader()
		if err != nil {
			return "", err
		}
		if leader != "" {
			return leader, nil
		}
		time.Sleep(10 * time.Second)
	}
}

// Negative: the else-if chain with a jittered wait.
func awaitLeaderJittered(s *streamer) string {
	for {
		leader, err := s.leader()
		if err != nil {
			log.Print(err)
		} else if leader == "" {
			log.Print("no leader yet")
		} else {
			return leader
		}
		time.Sleep(5*time.Second + rand.N(10*time.Second))
	}
}

type lease struct{}

func (s *streamer) newLease(key string) (*lease, error)             { return &lease{}, nil }
func (l *lease) hold(stop <-chan struct{}) (<-chan struct{}, error) { return nil, nil }

// Positive: a goto back to a stop check, the first attempt under an if
// that only guards it, a second attempt after it; each failure waits a
// constant 10s and goes back.
func holdLease(s *streamer, stop <-chan struct{}) {
	var l *lease
WAIT:
	select {
	case <-stop:
		return
	default:
	}
	if l == nil {
		var err error
		l, err = s.newLease("leader")
		if err != nil {
			log.Print(err)
			time.Sleep(10 * time.Second) // want `nojitter: retry loop waits a constant 10s between attempts`
			goto WAIT
		}
	}
	lost, err := l.hold(stop)
	if err != nil {
		l = nil
		time.Sleep(10 * time.Second) // want `nojitter: retry loop waits a constant 10s between attempts`
		goto WAIT
	}
	<-lost
	goto WAIT
}

func (s *streamer) refresh() error { return nil }

// Positive: registration retried a constant 10s apart, and registered
// again after a failed refresh; the refresh period in the select before
// it (ttl/2) paces success as well, and is no wait between attempts.
func keepRegistered(s *streamer, stop <-chan struct{}, ttl time.Duration) {
REGISTER:
	select {
	case <-stop:
		return
	default:
	}
	if err := s.register(); err != nil {
		time.Sleep(10 * time.Second) // want `nojitter: retry loop waits a constant 10s between attempts`
		goto REGISTER
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(ttl / 2):
			if err := s.refresh(); err != nil {
				time.Sleep(10 * time.Second) // want `nojitter: retry loop waits a constant 10s between attempts`
				goto REGISTER
			}
		}
	}
}
