package a

import (
	"net/http"
	"time"
)

// Retries by mutual recursion: the attempt's function hands a failure to
// another function of the package, which waits and calls it again.

type courier struct{ hc *http.Client }

// Positive: nothing counts the tries; only a success ends the calls.
func (c *courier) deliver(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.redeliver(req)
	}
	return resp, nil
}

func (c *courier) redeliver(req *http.Request) (*http.Response, error) {
	time.Sleep(time.Second)
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
