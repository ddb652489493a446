package a

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// Retries by mutual recursion: the attempt's function hands a failure to
// another function of the package, which waits and calls it again.

type courier struct{ hc *http.Client }

// Positive: nothing counts the tries; only a success ends the calls.
func (c *courier) deliver(req *http.Request) (int, error) {
	resp, err := c.hc.Do(req)
	if errors.Is(err, io.ErrUnexpectedEOF) || err != nil && resp == nil {
		return c.redeliver(req)
	}
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

func (c *courier) redeliver(req *http.Request) (int, error) {
	<-time.After(time.Minute)
	return c.deliver(req) // want `unbounded: retry loop has no attempt limit`
}

// Negative: each call back passes one try fewer, and the failure path
// hands over only while tries are left.
func (c *courier) deliverN(req *http.Request, tries int) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil && tries > 0 {
		return c.redeliverN(req, tries)
	}
	return resp, err
}

func (c *courier) redeliverN(req *http.Request, tries int) (*http.Response, error) {
	time.Sleep(time.Second)
	return c.deliverN(req, tries-1)
}
