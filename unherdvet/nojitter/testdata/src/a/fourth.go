package a

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// StoreError is a package's own error interface: it embeds error.
type StoreError interface {
	error
	Code() int
}

type storeNode struct{}

func (n *storeNode) info(keys ...string) (map[string]string, StoreError) { return nil, nil }

// Positive: the attempt returns the package's own error interface, and
// the loop waits a constant between attempts.
func (n *storeNode) infoWithRetry(tries int, keys ...string) (res map[string]string, err StoreError) {
	for i := 0; i < tries; i++ {
		if res, err = n.info(keys...); err == nil {
			return res, nil
		}
		time.Sleep(100 * time.Millisecond) // want `nojitter: retry loop waits a constant`
	}
	return nil, err
}

// Positive: a token refreshed for ever; a failure sets a constant wait
// for the next round, a success the time left before it expires.
func (n *storeNode) refreshForever(expiry func() time.Time) {
	wait := time.Until(expiry())
	for {
		time.Sleep(wait) // want `nojitter: retry loop waits the same delay`
		if _, err := n.info("token"); err != nil {
			wait = time.Second
		} else {
			wait = time.Until(expiry())
		}
	}
}

// Positive: the failure test asks for an answer as well as a nil error
// (res == nil || err != nil), and the exits are a switch on the status.
func fetchConfig(hc *http.Client, req *http.Request, tries int) error {
	try := 0
	for {
		try++
		if try > tries {
			break
		}
		res, err := hc.Do(req)
		if res == nil || err != nil {
			time.Sleep(2 * time.Second) // want `nojitter: retry loop waits a constant`
			continue
		}
		switch res.StatusCode {
		case http.StatusOK, http.StatusNotModified:
			return nil
		case http.StatusNotFound:
			return errors.New(res.Status)
		}
	}
	return errors.New("gave up")
}

type handler interface {
	Do(req *http.Request) (*http.Response, error)
}

type retryHandler struct {
	next       handler
	maxRetries int
}

func worthRetry(resp *http.Response, err error) bool { return err != nil }

// Positive: the failure path goes round only from the timer case of a
// select nested in an if; giving up falls into the return it shares with
// a success.
func (h *retryHandler) Do(req *http.Request) (resp *http.Response, err error) {
	ctx := req.Context()
	retries := 0
	for {
		resp, err = h.next.Do(req.Clone(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return resp, err
			}
			if retries < h.maxRetries && worthRetry(resp, err) {
				select {
				case <-ctx.Done():
					return resp, err
				case <-time.After(time.Second): // want `nojitter: retry loop waits a constant`
					retries++
					continue
				}
			}
		}
		return resp, err
	}
}

// Negative: a loop over pages that returns on every error; the continue
// under the error test goes on to the next page, not the same one.
func (h *retryHandler) pages(ctx context.Context, urls []string) error {
	for _, u := range urls {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := h.next.Do(req)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				continue
			}
		}
		_ = resp
		return err
	}
	return nil
}

type connPool struct{ free chan net.Conn }

func (p *connPool) get(deadline time.Time) (net.Conn, error) {
	select {
	case c := <-p.free:
		return c, nil
	default:
		return net.Dial("tcp", "db:3000")
	}
}

// Negative: a wait of a few milliseconds for a pool's free connection,
// until a deadline: a spin on a local resource, not a schedule.
func (p *connPool) getUntil(deadline time.Time) (net.Conn, error) {
	var err error
	for time.Now().Before(deadline) {
		var c net.Conn
		if c, err = p.get(deadline); err == nil {
			return c, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, err
}

type cmdPolicy struct {
	Pause      time.Duration
	Multiplier float64
	MaxRetries int
}

func defaultCmdPolicy() *cmdPolicy { return &cmdPolicy{Pause: time.Millisecond, Multiplier: 1} }

// Negative: the pause starts at the policy's default, a millisecond,
// everywhere the package sets it.
func (p *connPool) exec(policy *cmdPolicy) error {
	interval := policy.Pause
	var err error
	for i := 0; i <= policy.MaxRetries; i++ {
		if i > 0 {
			time.Sleep(interval)
			interval = time.Duration(float64(interval) * policy.Multiplier)
		}
		if _, err = p.get(time.Now().Add(time.Second)); err == nil {
			return nil
		}
	}
	return err
}

type partitionTracker struct{ done bool }

func (t *partitionTracker) assign(ctx context.Context) ([]string, error) { return nil, nil }
func (t *partitionTracker) complete() (bool, error)                      { return t.done, nil }

// Negative: a scan that gives up when a round fails and waits a growing
// pause only between rounds that succeed but are not complete: a poll.
func (t *partitionTracker) scan(ctx context.Context, pause time.Duration) error {
	for {
		parts, err := t.assign(ctx)
		if err != nil {
			return err
		}
		_ = parts
		if done, err := t.complete(); done || err != nil {
			return err
		}
		time.Sleep(pause)
		pause *= 2
	}
}

type replica struct{ errors, limit int }

func (r *replica) withinLimit() bool { return r.errors < r.limit }

var errRate = errors.New("error rate too high")

// validate only checks local state and builds an error.
func (r *replica) validate() error {
	if !r.withinLimit() {
		return errRate
	}
	return nil
}

// Negative: what goes round is a local check, which trying again cannot
// change: no attempt.
func (r *replica) waitHealthy(tries int) {
	for i := 0; i < tries; i++ {
		if err := r.validate(); err != nil {
			time.Sleep(time.Second)
			continue
		}
		return
	}
}
