package a

import (
	"context"
	"extlib"
	"math/rand/v2"
	"time"
)

func serveTunnel(conn int) {}

// Positive: a tunnel's reconnect loop backs off with a library's struct
// whose Jitter is left off, and waits through the library's own timer.
func reconnectLib(ctx context.Context) {
	b := &extlib.Backoff{Max: 5 * time.Minute}
	for {
		conn, err := dial("tunnel")
		if err != nil {
			d := b.Duration()
			select {
			case <-extlib.AfterSignal(d): // want `nojitter: retry loop's delay grows without jitter`
				continue
			case <-ctx.Done():
				return
			}
		}
		serveTunnel(conn)
	}
}

// Negative: the same with Jitter on.
func reconnectLibJitter(ctx context.Context) {
	b := &extlib.Backoff{Max: 5 * time.Minute, Jitter: true}
	for {
		conn, err := dial("tunnel")
		if err != nil {
			select {
			case <-extlib.AfterSignal(b.Duration()):
				continue
			case <-ctx.Done():
				return
			}
		}
		serveTunnel(conn)
	}
}

type deviceRequest struct{ PollInterval time.Duration }

type pollConfig struct{ LookupdPollInterval time.Duration }

// Positive: a configuration's poll interval is the client's own constant.
func redialEvery(cfg pollConfig) {
	for {
		time.Sleep(cfg.LookupdPollInterval) // want `nojitter: retry loop waits the same delay`
		if _, err := dial("nsqd"); err != nil {
			continue
		}
		break
	}
}

func exchangeDevice(ctx context.Context, req deviceRequest) (string, error) { return "", nil }

// Negative: a device-code flow polls at the interval the server gave.
func pollDevice(ctx context.Context, req deviceRequest) (string, error) {
	for {
		tok, err := exchangeDevice(ctx, req)
		if err == nil {
			return tok, nil
		}
		select {
		case <-time.After(req.PollInterval):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// A driver's reconnection policy: an interface whose implementation here
// returns a constant interval.
type reconnectionPolicy interface {
	Interval(retries int) time.Duration
	MaxRetries() int
}

type constantPolicy struct {
	Retries int
	Wait    time.Duration
}

func (p *constantPolicy) Interval(int) time.Duration { return p.Wait }
func (p *constantPolicy) MaxRetries() int            { return p.Retries }

type session struct{ policy reconnectionPolicy }

func newSession() *session {
	return &session{policy: &constantPolicy{Retries: 3, Wait: time.Second}}
}

// Positive: the wait comes through the interface; the implementation the
// program has returns a constant.
func (s *session) reconnect() error {
	var err error
	for i := 0; i < s.policy.MaxRetries(); i++ {
		if _, err = dial("db"); err == nil {
			return nil
		}
		time.Sleep(s.policy.Interval(i)) // want `nojitter: retry loop`
	}
	return err
}

type jitterPolicy interface{ Next() time.Duration }

type randomPolicy struct{ base time.Duration }

func (p randomPolicy) Next() time.Duration { return p.base/2 + rand.N(p.base) }

// Negative: every implementation of the interface draws at random.
func resubscribeJittered(p jitterPolicy, sub func() error) {
	for {
		if err := sub(); err != nil {
			time.Sleep(p.Next())
			continue
		}
		return
	}
}

// Negative: more, err := next() iterates; its boolean is no retry.
func drain(next func() (bool, error)) error {
	for {
		more, err := next()
		if !more {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type txnConfig struct {
	Backoff     time.Duration
	BackoffFunc func(retries int) time.Duration
}

// Positive: the attempt says itself whether to go round (retry, err =
// run()), and the delay comes from a function literal that returns the
// configured constant unless the user set a function.
func addPartitions(cfg txnConfig, run func() (bool, error)) error {
	computeBackoff := func(remaining int) time.Duration {
		if cfg.BackoffFunc != nil {
			return cfg.BackoffFunc(remaining)
		}
		return cfg.Backoff
	}
	remaining := 3
	var err error
	for remaining >= 0 {
		var retry bool
		retry, err = run()
		if !retry {
			return err
		}
		time.Sleep(computeBackoff(remaining)) // want `nojitter: retry loop`
		remaining--
	}
	return err
}

// Negative: a function literal that draws its delay at random.
func addPartitionsJittered(run func() (bool, error)) error {
	computeBackoff := func(remaining int) time.Duration {
		return time.Duration(rand.N(100)) * time.Millisecond
	}
	var err error
	for remaining := 3; remaining >= 0; remaining-- {
		var retry bool
		retry, err = run()
		if !retry {
			return err
		}
		time.Sleep(computeBackoff(remaining))
	}
	return err
}

func connectionOnce(ctx context.Context) (bool, error) { return false, nil }

// Positive: a tunnel client's supervisor loop: run the connection until
// it drops, reset the backoff after a good one, always wait and go round.
func connectionLoop(ctx context.Context) {
	b := &extlib.Backoff{Max: 5 * time.Minute}
	for {
		connected, err := connectionOnce(ctx)
		if connected {
			b.Reset()
		}
		_ = err
		select {
		case <-ctx.Done():
			return
		case <-extlib.AfterSignal(b.Duration()): // want `nojitter: retry loop's delay grows without jitter`
		}
	}
}

// Negative: a periodic job runs, logs and waits; no backoff is reset, it
// is no reconnect.
func every(ctx context.Context, job func(context.Context) error) {
	for {
		err := job(ctx)
		_ = err
		select {
		case <-time.After(time.Minute):
		case <-ctx.Done():
			return
		}
	}
}

// Negative, and no crash: a delay looked up in a map (d, ok := m[k]) is
// not followed.
func delayFromMap(delays map[string]time.Duration) error {
	for i := 0; i < 3; i++ {
		if _, err := dial("a"); err == nil {
			return nil
		}
		d, ok := delays["dial"]
		if !ok {
			continue
		}
		time.Sleep(d)
	}
	return nil
}

type schedOpts struct{ customBackoff []time.Duration }

type givenOpts struct{ backoff []time.Duration }

// Negative: a schedule from a field nothing in the package sets (only
// tests do): the program does not show what it holds.
func customSchedule(o schedOpts, f func(int) (bool, error)) error {
	var err error
	for i, interval := range o.customBackoff {
		time.Sleep(interval)
		var retry bool
		retry, err = f(i)
		if !retry {
			return err
		}
	}
	return err
}

// Positive: the same schedule, given by the package.
func givenSchedule(f func(int) (bool, error)) error {
	o := givenOpts{backoff: []time.Duration{time.Second, 2 * time.Second}}
	var err error
	for i, interval := range o.backoff {
		time.Sleep(interval) // want `nojitter: retry loop`
		var retry bool
		retry, err = f(i)
		if !retry {
			return err
		}
	}
	return err
}

type metaClient struct{ backoff time.Duration }

func (c *metaClient) fetch() error { return nil }

// Positive: a retry by recursion through a closure, which waits a
// constant and calls the function again.
func (c *metaClient) refresh(remaining int) error {
	retry := func(err error) error {
		if remaining > 0 {
			time.Sleep(c.backoff) // want `nojitter: retry loop waits the same delay`
			return c.refresh(remaining - 1)
		}
		return err
	}
	if err := c.fetch(); err != nil {
		return retry(err)
	}
	return nil
}

// Negative: the closure waits a random delay.
func (c *metaClient) refreshJittered(remaining int) error {
	retry := func(err error) error {
		if remaining > 0 {
			time.Sleep(rand.N(c.backoff))
			return c.refreshJittered(remaining - 1)
		}
		return err
	}
	if err := c.fetch(); err != nil {
		return retry(err)
	}
	return nil
}
