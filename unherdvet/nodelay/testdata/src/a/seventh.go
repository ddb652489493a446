package a

import (
	"context"
	"log"
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
