package a

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"math/rand/v2"
	"net/http"
	"time"

	"watchlib"
)

// Positive: a watch made again a constant second after its channel
// closes: every watcher of the service comes back at once after an
// outage.
func rewatch(c *watchlib.Client, key string, apply func(watchlib.Event)) {
	ch := c.Watch(context.Background(), key)
	for {
		for ev := range ch {
			apply(ev)
		}
		log.Print("watch stopped")
		time.Sleep(time.Second) // want `nojitter: retry loop waits a constant 1s between attempts`
		ch = c.Watch(context.Background(), key)
	}
}

// Positive: the same with the watch made at the top of the body, and a
// context that can stop it.
func rewatchTop(ctx context.Context, c *watchlib.Client, key string, apply func(watchlib.Event)) {
	for {
		ch := c.Watch(ctx, key)
		for ev := range ch {
			apply(ev)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second): // want `nojitter: retry loop waits a constant 2s between attempts`
		}
	}
}

// Negative: the wait after the drain is jittered.
func rewatchJittered(c *watchlib.Client, key string, apply func(watchlib.Event)) {
	ch := c.Watch(context.Background(), key)
	for {
		for ev := range ch {
			apply(ev)
		}
		time.Sleep(time.Second/2 + rand.N(time.Second))
		ch = c.Watch(context.Background(), key)
	}
}

// Negative: a channel of the package's own making, fed by nothing
// remote: a local fan-out drained round after round.
func drainLocal(jobs func() <-chan int, run func(int)) {
	for {
		ch := jobs()
		for j := range ch {
			run(j)
		}
		time.Sleep(time.Second)
	}
}

// Negative: a batch loop that asks for the next stream at once: a
// consumer moving on, not a retry.
func rewatchAtOnce(c *watchlib.Client, key string, apply func(watchlib.Event)) {
	for {
		for ev := range c.Watch(context.Background(), key) {
			apply(ev)
		}
	}
}

type settings struct{ Version int }

type tenant struct {
	client   *http.Client
	url      string
	settings *settings
	cache    map[string]*settings
}

// fetchSettings asks the service for the tenant's settings and answers
// nil when that fails.
func (t *tenant) fetchSettings() *settings {
	resp, err := t.client.Get(t.url + "/settings")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var s settings
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil
	}
	return &s
}

// Positive: the settings fetched again, into a field, while the fetch
// answers nil, after 1s doubling without jitter.
func (t *tenant) loadSettings(ctx context.Context) error {
	for d := time.Second; ; {
		t.settings = t.fetchSettings()
		if t.settings != nil {
			break
		}
		if d < time.Minute {
			d *= 2
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d): // want `nojitter: retry loop.s delay grows without jitter`
		}
	}
	return nil
}

// Positive: the same into a variable, the failure tested first.
func (t *tenant) settingsOrWait() *settings {
	for i := 0; i < 5; i++ {
		s := t.fetchSettings()
		if s == nil {
			time.Sleep(3 * time.Second) // want `nojitter: retry loop waits a constant 3s between attempts`
			continue
		}
		return s
	}
	return nil
}

// cached looks the settings up in memory and answers nil when they are
// not there yet.
func (t *tenant) cached(key string) *settings {
	s, ok := t.cache[key]
	if !ok {
		return nil
	}
	return s
}

// Negative: waiting for a local cache to be filled: nothing remote is
// asked again.
func (t *tenant) waitCached(key string) *settings {
	for i := 0; i < 5; i++ {
		if s := t.cached(key); s != nil {
			return s
		}
		time.Sleep(time.Second)
	}
	return nil
}

// Negative: the fetch tried again after a jittered wait.
func (t *tenant) settingsJittered() *settings {
	for i := 0; i < 5; i++ {
		s := t.fetchSettings()
		if s != nil {
			return s
		}
		time.Sleep(time.Second/2 + rand.N(time.Second))
	}
	return nil
}

type inboxMsg struct{ ID string }

func (t *tenant) receive(ctx context.Context) (*inboxMsg, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", t.url+"/messages", nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m inboxMsg
	return &m, json.NewDecoder(resp.Body).Decode(&m)
}

func (t *tenant) ack(ctx context.Context, m *inboxMsg) error {
	req, err := http.NewRequestWithContext(ctx, "DELETE", t.url+"/messages/"+m.ID, nil)
	if err != nil {
		return err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (m *inboxMsg) load(ctx context.Context, t *tenant) error { return nil }

// Positive: a long poll whose attempt is three steps, the later ones run
// only on success and their errors joined to the first's; a constant 10s
// after any failure.
func (t *tenant) next(ctx context.Context) (*inboxMsg, error) {
	for {
		m, err := t.receive(ctx)
		if err == nil {
			err = t.ack(ctx, m)
			err = errors.Join(err, m.load(ctx, t))
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Second): // want `nojitter: retry loop waits a constant 10s between attempts`
			}
		} else {
			return m, nil
		}
	}
}

// Negative: the same, with a jittered wait.
func (t *tenant) nextJittered(ctx context.Context) (*inboxMsg, error) {
	for {
		m, err := t.receive(ctx)
		if err == nil {
			err = errors.Join(t.ack(ctx, m), m.load(ctx, t))
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5*time.Second + rand.N(10*time.Second)):
			}
		} else {
			return m, nil
		}
	}
}

type runnerConn struct {
	client *http.Client
	base   string
}

func (c *runnerConn) request(ctx context.Context, method, path string) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Positive: the connection is copied, and a field of the copy set to the
// same value, in one arm each round: the target stays the same, and the
// request is sent again 5s times the attempt later, without jitter.
func acquireJob(ctx context.Context, c *runnerConn, serviceURL string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if serviceURL == "" {
			err = c.request(ctx, http.MethodGet, "/job")
		} else {
			cp := *c
			c = &cp
			c.base = serviceURL
			err = c.request(ctx, http.MethodPost, "/acquire")
		}
		if err == nil {
			return nil
		}
		<-time.After(5 * time.Second * time.Duration(attempt+1)) // want `nojitter: retry loop.s delay grows without jitter`
	}
	return err
}

// Positive: the same, waiting in a select on the context.
func acquireJobCtx(ctx context.Context, c *runnerConn, serviceURL string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if serviceURL == "" {
			err = c.request(ctx, http.MethodGet, "/job")
		} else {
			cp := *c
			c = &cp
			c.base = serviceURL
			err = c.request(ctx, http.MethodPost, "/acquire")
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second * time.Duration(attempt+1)): // want `nojitter: retry loop.s delay grows without jitter`
		}
	}
	return err
}

// Negative: failover: each round's copy points at the next address.
func acquireAny(ctx context.Context, c *runnerConn, bases []string) error {
	var err error
	for i := 0; i < len(bases); i++ {
		err = c.request(ctx, http.MethodGet, "/job")
		if err == nil {
			return nil
		}
		cp := *c
		cp.base = bases[i]
		c = &cp
		time.Sleep(time.Second)
	}
	return err
}

type outcome struct {
	Resp  *http.Response
	Err   error
	Retry bool
}

func (t *tenant) try(ctx context.Context, req *http.Request, n int) *outcome {
	resp, err := t.client.Do(req.WithContext(ctx))
	if err != nil {
		return &outcome{Err: err, Retry: n < 4}
	}
	return &outcome{Resp: resp, Retry: resp.StatusCode == http.StatusServiceUnavailable && n < 4}
}

// Positive: the attempt's result carries the error and the decision to
// go round; the wait doubles without jitter.
func (t *tenant) send(ctx context.Context, req *http.Request) (*http.Response, error) {
	var res *outcome
	for n := 0; ; n++ {
		res = t.try(ctx, req, n)
		if !res.Retry {
			break
		}
		time.Sleep(time.Second << n) // want `nojitter: retry loop.s delay grows without jitter`
	}
	return res.Resp, res.Err
}

// Negative: a result whose boolean says there is more to read: pages,
// not retries.
type listing struct {
	Items []string
	More  bool
	Err   error
}

func (t *tenant) fetchPage(ctx context.Context, n int) *listing { return &listing{} }

func (t *tenant) all(ctx context.Context) []string {
	var out []string
	for n := 0; ; n++ {
		p := t.fetchPage(ctx, n)
		if !p.More {
			break
		}
		out = append(out, p.Items...)
		time.Sleep(time.Second)
	}
	return out
}
