package a

import (
	"context"
	"net/http"
	"time"
)

var shared = &http.Client{}

var bounded = &http.Client{Timeout: 10 * time.Second}

func defaults(url string) {
	http.Get(url)                // want `notimeout: http.Get uses http.DefaultClient, which has no timeout`
	http.Post(url, "", nil)      // want `http.Post uses http.DefaultClient`
	http.DefaultClient.Head(url) // want `http.DefaultClient.Head has no timeout`
}

func doNoContext(url string) error {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req) // want `http.DefaultClient.Do has no timeout`
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func sharedClient(url string) {
	shared.Get(url) // want `shared.Get on an http.Client without Timeout, and takes no context`
}

func localClient(url string) error {
	c := &http.Client{Transport: http.DefaultTransport}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	_, err = c.Do(req) // want `its request, from http.NewRequest, has no context`
	return err
}

var zero http.Client

func zeroClient(url string) {
	zero.Get(url) // want `zero.Get on an http.Client without Timeout`
}

// Negative: the request carries a context, which may carry a deadline.
func withContext(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	_, err = http.DefaultClient.Do(req)
	return err
}

// Negative: the client has a timeout.
func withTimeout(url string) {
	bounded.Get(url)
	c := &http.Client{Timeout: time.Second}
	c.Get(url)
}

// Negative: the timeout is set after the literal.
func setLater(url string) {
	c := &http.Client{}
	c.Timeout = time.Second
	c.Get(url)
}

// Negative: a client the analyzer did not see built.
func given(c *http.Client, url string) {
	c.Get(url)
}

// Silenced.
func silenced(url string) {
	http.Get(url) //unherdvet:ignore notimeout a local health probe with its own watchdog
}
