package a

import (
	"bytes"
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

// Negative: the same guarded recursion waits before it calls again.
func (r *reporter) sendPaced(item []byte, left int) error {
	if r.allowed() {
		retryable, err := r.post(item)
		if err != nil {
			if !retryable || left <= 0 {
				return err
			}
			time.Sleep(time.Second)
			return r.sendPaced(item, left-1)
		}
		r.sent++
	}
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
