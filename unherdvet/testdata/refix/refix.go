// Package refix holds retry loops with several findings each, some of
// which vet can fix: applying any one fix must leave the others found.
package refix

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// Fetch gets url until it answers, a constant second apart, with ctx in
// scope but not waited on, on the default client: notimeout, nojitter,
// sleepctx and unbounded.
func Fetch(ctx context.Context, url string) (*http.Response, error) {
	for {
		resp, err := http.Get(url)
		if err == nil {
			return resp, nil
		}
		time.Sleep(time.Second)
	}
}

// Post sends body three times at most, two seconds apart: notimeout,
// nojitter and sleepctx.
func Post(ctx context.Context, url string) (*http.Response, error) {
	var resp *http.Response
	var err error
	for i := 0; i < 3; i++ {
		resp, err = http.Head(url)
		if err == nil && resp.StatusCode < 500 {
			return resp, nil
		}
		time.Sleep(2 * time.Second)
	}
	return resp, err
}

// Send posts a batch up to five times, half a second apart, and gives up
// after a failure that is not a timeout: notimeout, nojitter, sleepctx and
// idempotency.
func Send(ctx context.Context, url string) error {
	for attempt := 0; attempt < 5; attempt++ {
		resp, err := http.Post(url, "text/plain", strings.NewReader("batch"))
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			return err
		}
		return resp.Body.Close()
	}
	return errors.New("refix: gave up")
}
