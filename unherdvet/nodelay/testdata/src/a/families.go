package a

import (
	"context"
	"errors"
	"net"
	"net/http"
)

type sdk struct{ hc *http.Client }

// Positive: an SDK's hand-written attempt loop retries timeouts and 5xx
// at once.
func (c *sdk) get(ctx context.Context, url string) (*http.Response, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // want `nodelay: retry loop tries again at once`
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				lastErr = err
				continue
			}
			return nil, err
		}
		if resp.StatusCode >= 500 {
			resp.Body.Close()
			lastErr = errors.New(resp.Status)
			continue
		}
		return resp, nil
	}
	return nil, lastErr
}

type pgConn struct{}

var thePgConn = &pgConn{}

func (cn *pgConn) ssl(mode string) error { return nil }
func pgDial(ctx context.Context) error   { return nil }
func failed(err error) bool              { return err != nil }

// Negative: a goto that falls back to another SSL mode after the second
// call fails is a protocol fallback; the dial before it is not retried.
func pgOpen(ctx context.Context, hosts []string) error {
	for range hosts {
		mode := "prefer"
	restartHost:
		var err error
		err = pgDial(ctx)
		if failed(err) {
			continue
		}
		err = thePgConn.ssl(mode)
		if err != nil && mode == "prefer" {
			mode = "disable"
			goto restartHost
		}
		return nil
	}
	return nil
}

type queue struct{ broker string }

type broker struct{}

func (broker) invokeOneWay(ctx context.Context, addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

func selectQueue(last string) *queue { return &queue{broker: last + "x"} }

// Negative: each retry sends to a queue on another broker, picked given
// the last one: failover, not a retry of the same call.
func sendOneWay(ctx context.Context, b broker) error {
	var err error
	var q *queue
	for i := 0; i < 3; i++ {
		var last string
		if q != nil {
			last = q.broker
		}
		q = selectQueue(last)
		if q == nil {
			continue
		}
		if err = b.invokeOneWay(ctx, q.broker); err != nil {
			continue
		}
		return nil
	}
	return err
}
