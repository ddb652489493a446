package a

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

type forwarder struct {
	conn     net.Conn
	maxRetry int
}

// write sends data once; it says whether a failure is worth another try.
func (f *forwarder) write(ctx context.Context, data []byte) (retry bool, err error) {
	if _, err := f.conn.Write(data); err != nil {
		return true, err
	}
	return false, nil
}

// next reads one record; more says whether there is one after it.
func (f *forwarder) next(ctx context.Context, buf []byte) (more bool, err error) {
	n, err := f.conn.Read(buf)
	return n > 0, err
}

// Positive: the attempt's own decision is tested in the if that makes
// it, and the loop goes round at once.
func (f *forwarder) writeWithRetry(ctx context.Context, data []byte) error {
	for i := 0; i < f.maxRetry; i++ { // want `nodelay: retry loop tries again at once`
		if retry, err := f.write(ctx, data); !retry {
			return err
		}
	}
	return errors.New("gave up")
}

// Negative: a boolean not named for retrying, in the same shape, is the
// next item of an iteration.
func (f *forwarder) drain(ctx context.Context, buf []byte) error {
	for i := 0; i < f.maxRetry; i++ {
		if more, err := f.next(ctx, buf); !more {
			return err
		}
	}
	return nil
}

type crawler struct {
	hc    *http.Client
	times int
}

type crawlRequest struct {
	*http.Request
	rendered bool
	retried  int
}

func (c *crawler) viaBrowser(req *crawlRequest) (*http.Response, error) { return c.hc.Do(req.Request) }
func (c *crawler) viaClient(req *crawlRequest) (*http.Response, error)  { return c.hc.Do(req.Request) }

// Positive: the attempt is one of two calls an if/else picks, and a
// failure calls the function again at once.
func (c *crawler) fetch(req *crawlRequest) (resp *http.Response, err error) {
	if req.rendered {
		resp, err = c.viaBrowser(req)
	} else {
		resp, err = c.viaClient(req)
	}
	if err != nil {
		if req.retried < c.times {
			req.retried++
			return c.fetch(req) // want `nodelay: retry loop tries again at once`
		}
		return nil, err
	}
	return resp, nil
}

// Negative: the function calls itself on another request after a
// success (the next page), not after a failure.
func (c *crawler) follow(req *crawlRequest) (resp *http.Response, err error) {
	if req.rendered {
		resp, err = c.viaBrowser(req)
	} else {
		resp, err = c.viaClient(req)
	}
	if err != nil {
		return nil, err
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		next, _ := http.NewRequest(http.MethodGet, loc, nil)
		return c.follow(&crawlRequest{Request: next})
	}
	return resp, nil
}

type configServers struct{ down map[string]bool }

func (s *configServers) pick() string         { return "" }
func (s *configServers) markDown(host string) { s.down[host] = true }

// Negative: failover: each failure marks the server down, the next
// round picks another, and the loop ends when none is left.
func (s *configServers) fetchAny(hc *http.Client) (*http.Response, error) {
	var err error
	for {
		host := s.pick()
		if host == "" {
			return nil, err
		}
		var resp *http.Response
		resp, err = hc.Get("http://" + host + "/config")
		if err == nil {
			return resp, nil
		}
		s.markDown(host)
	}
}

// Positive: the server is picked again each round but never marked
// down, so the balancer can give the failed one back, at once.
func (s *configServers) fetchLogged(hc *http.Client) (*http.Response, error) {
	for { // want `nodelay: retry loop tries again at once`
		resp, err := hc.Get("http://" + s.pick() + "/config")
		if err == nil {
			return resp, nil
		}
		println(err.Error())
	}
}

// Negative: periodic work: after a failure the loop waits for the next
// tick, as after a success.
func publishEveryTick(ctx context.Context, hc *http.Client, url string, done <-chan struct{}) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
			resp, err := hc.Do(req)
			if err != nil {
				continue
			}
			resp.Body.Close()
		}
	}
}

type lineSource interface {
	ReadString(delim byte) (string, error)
}

func publish(ctx context.Context, hc *http.Client, url, line string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, url+"?m="+line, nil)
	_, err := hc.Do(req)
	return err
}

// Negative: each round publishes the next line read; a failure drops
// that line and goes on to the next.
func publishLines(ctx context.Context, hc *http.Client, url string, in lineSource) {
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		if err = publish(ctx, hc, url, line); err != nil {
			continue
		}
		println("sent")
	}
}

// Positive: the line is read once; a failure publishes it again at once.
func publishLine(ctx context.Context, hc *http.Client, url string, in lineSource) error {
	line, err := in.ReadString('\n')
	if err != nil {
		return err
	}
	for { // want `nodelay: retry loop tries again at once`
		if err = publish(ctx, hc, url, line); err != nil {
			continue
		}
		return nil
	}
}
