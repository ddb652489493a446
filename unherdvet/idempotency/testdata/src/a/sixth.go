package a

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

type doer interface {
	Do(req *http.Request) (*http.Response, error)
}

type retrying struct {
	next    doer
	retries int
}

// Positive: a wrapper that sends again whatever request it is handed,
// a copy of it each time, on any failure; the package hands it POSTs.
func (r *retrying) Do(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		cloned := req.Clone(req.Context())
		resp, err := r.next.Do(cloned) // want `idempotency: retry loop sends again the request it was handed, whatever its method`
		if err == nil || attempt >= r.retries {
			return resp, err
		}
		time.Sleep(time.Duration(attempt+1) * time.Second)
	}
}

// Positive: a client's helper that sends the caller's request again
// after an error.
func sendRetrying(ctx context.Context, hc *http.Client, req *http.Request) (*http.Response, error) {
	var err error
	for range 3 {
		var resp *http.Response
		resp, err = hc.Do(req.WithContext(ctx)) // want `idempotency: retry loop sends again the request it was handed, whatever its method`
		if err == nil {
			return resp, nil
		}
	}
	return nil, err
}

// Negative: a wrapper that retries only the methods that are safe to
// repeat.
func (r *retrying) DoSafe(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := r.next.Do(req.Clone(req.Context()))
		if err == nil || attempt >= r.retries || req.Method != http.MethodGet {
			return resp, err
		}
		time.Sleep(time.Second)
	}
}

// Negative: a wrapper that retries only requests that carry a key.
func (r *retrying) DoKeyed(req *http.Request) (*http.Response, error) {
	keyed := req.Header.Get("Idempotency-Key") != ""
	for attempt := 0; ; attempt++ {
		resp, err := r.next.Do(req.Clone(req.Context()))
		if err == nil || !keyed || attempt >= r.retries {
			return resp, err
		}
		time.Sleep(time.Second)
	}
}

// Negative: the loop builds its own GET; the request it was handed only
// gives it a URL.
func refetch(ctx context.Context, hc *http.Client, from *http.Request) (*http.Response, error) {
	for range 3 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, from.URL.String(), nil)
		if err != nil {
			return nil, err
		}
		if resp, err := hc.Do(req); err == nil {
			return resp, nil
		}
	}
	return nil, errors.New("gave up")
}

func createItem(ctx context.Context, r *retrying, url, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := r.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
