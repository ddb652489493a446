package a

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

type reporter struct {
	client   *http.Client
	endpoint string
	sent     int
	limit    int
}

// allowed says whether the per-minute quota has room for one more item.
func (r *reporter) allowed() bool { return r.sent < r.limit }

// post sends one item; retryable says whether a failure may be tried again.
func (r *reporter) post(item []byte) (retryable bool, err error) {
	resp, err := r.client.Post(r.endpoint, "application/json", bytes.NewReader(item))
	if err != nil {
		return true, err
	}
	resp.Body.Close()
	return false, nil
}

// Positive: the attempt sits in an if that only guards it (a quota), and
// its failure path calls the function again at once.
func (r *reporter) send(item []byte, left int) error {
	if r.allowed() {
		retryable, err := r.post(item)
		if err != nil {
			if !retryable || left <= 0 {
				return err
			}
			return r.send(item, left-1) // want `nodelay: retry loop tries again at once`
		}
		r.sent++
	}
	return nil
}

// Negative: a guarded recursion that waits before it calls again.
func (r *reporter) sendPaced(item []byte, left int) error {
	if !r.allowed() {
		return nil
	}
	if retryable, err := r.post(item); err != nil && retryable && left > 0 {
		time.Sleep(time.Second)
		return r.sendPaced(item, left-1)
	} else if err != nil {
		return err
	}
	r.sent++
	return nil
}

// Negative: the guarded call passes the next endpoint: a failover, not a
// retry of the same call.
func (r *reporter) sendTo(item []byte, endpoints []string) error {
	if len(endpoints) > 0 {
		r.endpoint = endpoints[0]
		_, err := r.post(item)
		if err != nil {
			return r.sendTo(item, endpoints[1:])
		}
	}
	return nil
}

type timeoutError interface{ Timeout() bool }

// version asks the service for a version, waiting for it to change; the
// client's own timeout ends a request that gets no answer.
func (r *reporter) version(path string) (string, error) {
	resp, err := r.client.Get(r.endpoint + path)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return resp.Status, nil
}

func (r *reporter) versionCtx(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.endpoint+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return resp.Status, nil
}

// Negative: the long poll goes round at once only after a timeout: the
// try has already waited its timeout; any other error ends it.
func (r *reporter) waitVersion(path string) (string, error) {
	for {
		v, err := r.version(path)
		if err != nil {
			if t, ok := err.(timeoutError); ok && t.Timeout() {
				continue
			}
			return "", err
		}
		return v, nil
	}
}

// Timeout says whether timed-out polls go round: a function named
// Timeout that is not a net.Error's method.
func Timeout() bool { return true }

// Negative: the same, going round after a timeout only when Timeout
// allows it: a call of another Timeout beside the net.Error's does not
// hide it.
func (r *reporter) waitVersionAllowed(path string) (string, error) {
	for {
		v, err := r.version(path)
		if err != nil {
			if t, ok := err.(timeoutError); ok && t.Timeout() && Timeout() {
				continue
			}
			return "", err
		}
		return v, nil
	}
}

// Positive: the same with a context: once its deadline has passed, every
// try times out at once.
func (r *reporter) waitVersionCtx(ctx context.Context, path string) (string, error) {
	for { // want `nodelay: retry loop tries again at once`
		v, err := r.versionCtx(ctx, path)
		if err != nil {
			if t, ok := err.(timeoutError); ok && t.Timeout() {
				continue
			}
			return "", err
		}
		return v, nil
	}
}
