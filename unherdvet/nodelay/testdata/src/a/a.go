package a

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"time"
)

func fetch(ctx context.Context, id string) (int, error) { return 0, nil }
func refresh(ctx context.Context) error                 { return nil }
func compute() error                                    { return nil }

var errConflict = errors.New("conflict")

// Positive: three attempts back to back against a remote call.
func hot(ctx context.Context, id string) (int, error) {
	var err error
	for i := 0; i < 3; i++ { // want `nodelay: retry loop tries again at once`
		var n int
		if n, err = fetch(ctx, id); err == nil {
			return n, nil
		}
	}
	return 0, err
}

// Positive: an HTTP request retried until it answers well.
func hotHTTP(c *http.Client, req *http.Request) (*http.Response, error) {
	for attempt := 0; attempt < 5; attempt++ { // want `tries again at once`
		resp, err := c.Do(req)
		if err == nil && resp.StatusCode < 500 {
			return resp, nil
		}
	}
	return nil, errors.New("gave up")
}

// Positive: a redial by goto.
func redial(addr string) (net.Conn, error) {
	tries := 0
again:
	conn, err := net.Dial("tcp", addr)
	if err != nil && tries < 3 {
		tries++
		goto again // want `tries again at once`
	}
	return conn, err
}

// Positive: a retry by recursion.
func get(ctx context.Context, id string, left int) (int, error) {
	n, err := fetch(ctx, id)
	if err != nil && left > 0 {
		return get(ctx, id, left-1) // want `tries again at once`
	}
	return n, err
}

// Negative: it waits.
func waits(ctx context.Context, id string) (int, error) {
	for i := 0; i < 3; i++ {
		n, err := fetch(ctx, id)
		if err == nil {
			return n, nil
		}
		time.Sleep(time.Duration(i) * time.Second)
	}
	return 0, errors.New("gave up")
}

// Negative: a wait the analyzer does not know, given a duration.
type pacer struct{}

func (pacer) Pause(d time.Duration) {}

func paced(ctx context.Context, p pacer, id string) error {
	for i := 0; i < 3; i++ {
		if _, err := fetch(ctx, id); err == nil {
			return nil
		}
		p.Pause(time.Second)
	}
	return nil
}

// Negative: a token refreshed before the next attempt (another call to
// the service, which changes what is tried).
func refreshed(ctx context.Context, id string) (int, error) {
	for i := 0; i < 2; i++ {
		n, err := fetch(ctx, id)
		if err == nil {
			return n, nil
		}
		if err := refresh(ctx); err != nil {
			return 0, err
		}
	}
	return 0, errors.New("gave up")
}

// Negative: a local call retried at once.
func removeBusy(path string) error {
	var err error
	for i := 0; i < 3; i++ {
		if err = os.Remove(path); err == nil {
			return nil
		}
	}
	return err
}

// Negative: nothing remote.
func local() error {
	for i := 0; i < 3; i++ {
		if err := compute(); err == nil {
			return nil
		}
	}
	return errConflict
}

// Silenced with a reason.
func silenced(ctx context.Context, id string) (int, error) {
	//unherdvet:ignore nodelay the server's own queue paces these
	for range 3 {
		if n, err := fetch(ctx, id); err == nil {
			return n, nil
		}
	}
	return 0, errConflict
}

// Positive: a long-poll loop whose call reaches the service two calls
// down, and goes round at once on an error.
type poller struct {
	c    *http.Client
	stop chan struct{}
}

func (p *poller) raw(method string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, "https://api.example/"+method, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return nil, nil
}

func (p *poller) updates() ([]byte, error) { return p.raw("getUpdates") }

func (p *poller) poll(out chan<- []byte) {
	for { // want `tries again at once`
		select {
		case <-p.stop:
			return
		default:
		}
		u, err := p.updates()
		if err != nil {
			continue
		}
		out <- u
	}
}

// Positive: one failure path waits, the other (a handler is set) does
// not; and a success that is empty goes round too.
type updater struct {
	onErr func(error)
	stop  func() bool
}

func (u *updater) loop(p *poller, out chan<- []byte) {
	for {
		if u.stop() {
			return
		}
		r, err := p.updates()
		if err != nil {
			if u.onErr != nil { // want `this failure path of the retry loop tries again at once`
				u.onErr(err)
			} else {
				time.Sleep(time.Second)
			}
			continue
		} else if len(r) == 0 {
			continue
		}
		out <- r
	}
}

// Negative: a consumer of local work skips a bad item.
func consume(items <-chan string) {
	for {
		s := <-items
		if err := os.Remove(s); err != nil {
			continue
		}
	}
}

// Positive: a request sent again by recursion on a 5xx status, at once.
func (p *poller) send(method, url string, sequence int) (*http.Response, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.c.Do(req)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		if sequence < 3 {
			resp, err = p.send(method, url, sequence+1) // want `tries again at once`
		}
	}
	return resp, err
}

// Negative: failover to the next endpoint, three at most.
type lookup struct{ addrs []string }

func (l *lookup) nextEndpoint() string { return l.addrs[0] }

func (l *lookup) query(ctx context.Context) error {
	tries := 0
again:
	endpoint := l.nextEndpoint()
	_, err := fetch(ctx, endpoint)
	if err != nil {
		tries++
		if tries < 3 {
			goto again
		}
		return err
	}
	return nil
}
