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
