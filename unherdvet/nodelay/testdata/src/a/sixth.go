package a

import (
	"errors"
	"os"
	"time"

	"example.com/acme/queue/mq"
)

var errServer = errors.New("server error")

// Positive: a helper that tries the function it is handed three times at
// once on a server error; the package hands it calls of a queue service.
func retry(fn func() error) error {
	var err error
	for i := 0; i < 3; i++ { // want `nodelay: retry loop tries again at once`
		err = fn()
		if err == nil {
			return nil
		}
		if errors.Is(err, errServer) {
			continue
		}
		break
	}
	return err
}

func release(q mq.Queue, id string) error {
	return retry(func() error { return q.Release(id) })
}

func remove(q mq.Queue, id string) error {
	return retry(func() error {
		return q.Delete(id)
	})
}

// Negative: the same helper, handed only local work by the package.
func again(fn func() error) error {
	var err error
	for i := 0; i < 3; i++ {
		err = fn()
		if err == nil {
			return nil
		}
	}
	return err
}

func cleanup(path string) error {
	return again(func() error { return os.Remove(path) })
}

// Negative: a helper handed remote calls that waits between tries.
func retryPaced(fn func() error) error {
	var err error
	for i := 0; i < 3; i++ {
		err = fn()
		if err == nil {
			return nil
		}
		time.Sleep(time.Duration(i+1) * 100 * time.Millisecond)
	}
	return err
}

func releasePaced(q mq.Queue, id string) error {
	return retryPaced(func() error { return q.Release(id) })
}

type item struct {
	body        []byte
	retriesLeft int
}

type asyncSender struct {
	queue chan item
	q     mq.Queue
}

// Positive: a failed send goes back into the channel the loop reads, and
// is sent again as soon as the loop comes round to it.
func (s *asyncSender) run() {
	for it := range s.queue { // want `nodelay: retry loop tries again at once`
		if err := s.q.Release(string(it.body)); err != nil {
			if it.retriesLeft > 0 {
				it.retriesLeft--
				select {
				case s.queue <- it:
				default:
				}
			}
		}
	}
}

// Negative: a consumer that puts back an item whose local work failed.
func (s *asyncSender) spool(dir string) {
	for it := range s.queue {
		if err := os.WriteFile(dir+"/item", it.body, 0o600); err != nil {
			if it.retriesLeft > 0 {
				it.retriesLeft--
				s.queue <- it
			}
		}
	}
}
