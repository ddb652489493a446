package a

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

// Positive: http.Post in a retry loop.
func post(url string, body []byte) (*http.Response, error) {
	var err error
	for i := 0; i < 3; i++ {
		resp, err := http.Post(url, "application/json", bytes.NewReader(body)) // want `idempotency: retry loop repeats a POST without an Idempotency-Key header`
		if err == nil {
			return resp, nil
		}
		time.Sleep(time.Second)
	}
	return nil, err
}

// Positive: Do of a PATCH built in the loop.
func patch(ctx context.Context, c *http.Client, url string, body []byte) error {
	for i := 0; i < 3; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := c.Do(req) // want `repeats a PATCH without an Idempotency-Key`
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		return resp.Body.Close()
	}
	return nil
}

// Negative: the request carries a key.
func keyed(ctx context.Context, c *http.Client, url, key string, body []byte) error {
	for range 3 {
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", key)
		if resp, err := c.Do(req); err == nil {
			return resp.Body.Close()
		}
		time.Sleep(time.Second)
	}
	return nil
}

// Negative: a GET may be repeated, the same request each time.
func get(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	var resp *http.Response
	for tries := 3; tries > 0; tries-- {
		if resp, err = c.Do(req); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	return resp, err
}

// Negative: the request goes through a helper that may set the key.
func sign(*http.Request) {}

func helper(ctx context.Context, c *http.Client, url string) error {
	for i := 0; i < 3; i++ {
		req, err := http.NewRequestWithContext(ctx, "POST", url, nil)
		if err != nil {
			return err
		}
		sign(req)
		resp, err := c.Do(req)
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		return resp.Body.Close()
	}
	return nil
}

// Negative: one POST, no retry loop.
func once(url string) error {
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Positive: a POST retried by goto.
func postGoto(url string, body []byte) (*http.Response, error) {
	tries := 0
again:
	resp, err := http.Post(url, "application/json", bytes.NewReader(body)) // want `repeats a POST without an Idempotency-Key`
	if err != nil && tries < 3 {
		tries++
		time.Sleep(time.Second)
		goto again
	}
	return resp, err
}

// Positive: a POST retried by recursion.
func postAgain(c *http.Client, url string, body []byte, left int) (*http.Response, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body)) // want `repeats a POST without an Idempotency-Key`
	if err != nil && left > 0 {
		time.Sleep(time.Second)
		return postAgain(c, url, body, left-1)
	}
	return resp, err
}

// Positive: a POST retried until the answer is good, with no wait.
func postUntilGood(c *http.Client, url string, body []byte) (*http.Response, error) {
	for i := 0; i < 3; i++ {
		resp, err := c.Post(url, "application/json", bytes.NewReader(body)) // want `repeats a POST without an Idempotency-Key`
		if err == nil && resp.StatusCode < 500 {
			return resp, nil
		}
	}
	return nil, nil
}

// Positive: a POST in a loop that keeps sending after a success.
func postForever(c *http.Client, url string, body []byte) {
	for {
		resp, err := c.Post(url, "application/json", bytes.NewReader(body)) // want `repeats a POST without an Idempotency-Key`
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		resp.Body.Close()
	}
}

// Negative: the recursive POST carries a key.
func postKeyed(c *http.Client, req *http.Request, left int) (*http.Response, error) {
	req.Header.Set("Idempotency-Key", "k")
	resp, err := c.Do(req)
	if err != nil && left > 0 {
		return postKeyed(c, req, left-1)
	}
	return resp, err
}
