package a

import (
	"context"
	"net/http"
	"time"
)

// Positive: the attempt is guarded by an if on the request's error, as
// vet's notimeout fix writes it.
func guardedIf(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	var resp *http.Response
	var err error
	for i := 0; i < 3; i++ {
		var req *http.Request
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err == nil {
			resp, err = c.Do(req)
		}
		if err == nil {
			return resp, nil
		}
		time.Sleep(time.Second) // want `nojitter: retry loop waits a constant 1s`
	}
	return nil, err
}

// Positive: if/else arms that each make the attempt.
func guardedElse(ttl time.Duration) error {
	var err error
	for i := 0; i < 3; i++ {
		if ttl > 0 {
			_, err = dial("a")
		} else {
			_, err = dial("b")
		}
		if err == nil {
			return nil
		}
		time.Sleep(time.Second) // want `nojitter: retry loop waits a constant 1s`
	}
	return err
}

// Positive: a switch picks how to make the attempt.
func guardedSwitch(mode int) error {
	var err error
	for i := 0; i < 3; i++ {
		switch mode {
		case 0:
			err = call()
		default:
			_, err = dial("a")
		}
		if err != nil {
			time.Sleep(2 * time.Second) // want `nojitter: retry loop waits a constant 2s`
			continue
		}
		return nil
	}
	return err
}

// Negative: an arm that leaves the loop is a decision, not a guard; the
// loop returns on every error (a poll).
func guardedPoll() error {
	var err error
	for {
		if err == nil {
			err = call()
		} else {
			return err
		}
		time.Sleep(time.Second)
	}
}
