package a

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
)

type batcher struct{ hc *http.Client }

// Positive: a webhook batch re-sent after a timeout, with no key: a
// timeout says nothing of whether the server applied it.
func (b *batcher) sendBatch(ctx context.Context, url string, body []byte) error {
	for attempt := 0; attempt < 3; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := b.hc.Do(req) // want `idempotency: retry loop repeats a POST without an Idempotency-Key`
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		return resp.Body.Close()
	}
	return errors.New("gave up")
}

// Negative: the same batch with a key that stays the same on every
// attempt.
func (b *batcher) sendKeyed(ctx context.Context, url, key string, body []byte) (err error) {
	for range 3 {
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body)); err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", key)
		var resp *http.Response
		if resp, err = b.hc.Do(req); err == nil {
			return resp.Body.Close()
		}
	}
	return err
}

type apiClient struct{ hc *http.Client }

// Positive: the method is a parameter, and the package's post passes
// POST through request: a timed-out POST is sent again without a key.
func (c *apiClient) do(ctx context.Context, method, url string) error {
	for attempt := 0; attempt < 3; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.hc.Do(req) // want `idempotency: retry loop repeats a POST without an Idempotency-Key`
		if err != nil {
			continue
		}
		return resp.Body.Close()
	}
	return errors.New("gave up")
}

func (c *apiClient) request(ctx context.Context, method, url string) error {
	return c.do(ctx, method, url)
}

func (c *apiClient) post(ctx context.Context, url string) error {
	return c.request(ctx, http.MethodPost, url)
}

type readClient struct{ hc *http.Client }

// Negative: every caller passes GET.
func (c *readClient) do(ctx context.Context, method, url string) error {
	for attempt := 0; attempt < 3; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			continue
		}
		return resp.Body.Close()
	}
	return errors.New("gave up")
}

func (c *readClient) get(ctx context.Context, url string) error {
	return c.do(ctx, http.MethodGet, url)
}
