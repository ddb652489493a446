package a

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"
)

type pendingWrite struct {
	deadline time.Time
	fn       func() error
}

type syncer struct {
	requests chan *pendingWrite
	done     chan struct{}
	interval time.Duration
}

// Positive: the writes that failed are kept and tried again on the next
// tick, a fixed interval later.
func (s *syncer) run() {
	var pending []*pendingWrite
	for {
		select {
		case <-s.done:
			return
		case r := <-s.requests:
			pending = append(pending, r)
		case <-time.After(s.interval): // want `nojitter: retry loop waits the same delay \(s.interval\)`
			var failed []*pendingWrite
			for _, r := range pending {
				if r.deadline.Before(time.Now()) {
					continue
				}
				if err := r.fn(); err != nil {
					failed = append(failed, r)
				}
			}
			pending = failed
		}
	}
}

type broker struct{ c *http.Client }

// sendBack tells the broker to redeliver msg later; false when it refused.
func (b *broker) sendBack(ctx context.Context, msg string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://broker/back", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Positive: the messages the broker refused are sent back again after a
// constant wait, by a goto back to the label.
func (b *broker) consume(ctx context.Context, msgs []string) {
retry:
	var refused []string
	for i := 0; i < len(msgs); i++ {
		if !b.sendBack(ctx, msgs[i]) {
			refused = append(refused, msgs[i])
		}
	}
	if len(refused) > 0 {
		msgs = refused
		time.Sleep(5 * time.Second) // want `nojitter: retry loop waits a constant 5s between attempts`
		goto retry
	}
}

// Negative: the failed writes are kept and tried again with a jittered
// wait.
func (s *syncer) runJittered() {
	var pending []*pendingWrite
	for {
		select {
		case <-s.done:
			return
		case <-time.After(s.interval/2 + time.Duration(rand.N(int64(s.interval)))):
			var failed []*pendingWrite
			for _, r := range pending {
				if err := r.fn(); err != nil {
					failed = append(failed, r)
				}
			}
			pending = failed
		}
	}
}

// Negative: a batch loop that keeps what is left to send, not what
// failed: no attempt's failure feeds the next round.
func (s *syncer) drain(batch []*pendingWrite) {
	for len(batch) > 0 {
		var rest []*pendingWrite
		for i, r := range batch {
			if i >= 10 {
				rest = append(rest, r)
			}
		}
		batch = rest
		time.Sleep(time.Second)
	}
}
