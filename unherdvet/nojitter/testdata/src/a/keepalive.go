package a

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

type conn struct{ quit chan struct{} }

func (c *conn) ping(ctx context.Context) (int, error) { return 0, nil }
func (c *conn) reconnect(ctx context.Context)         {}

// Negative: a keepalive waits on every round, whatever the last one gave;
// a failure only counts. Its phase is set when the connection opens.
func (c *conn) keepalive(ctx context.Context) {
	interval := time.Second
	timer := time.NewTimer(interval)
	failures := 0
	for {
		if failures > 5 {
			return
		}
		timer.Reset(interval)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if _, err := c.ping(ctx); err != nil {
			failures++
			continue
		}
		interval = 5 * time.Second
		failures = 0
	}
}

// Negative: a periodic poll sleeps at the top of every round.
func (c *conn) poll(ctx context.Context) {
	for {
		time.Sleep(10 * time.Second)
		n, err := c.ping(ctx)
		if err != nil {
			continue
		}
		_ = n
	}
}

// Positive: a heartbeat that reconnects on failure, through a goto to
// the end of its body, and sets the delay for the next round there.
func (c *conn) heartbeat(ctx context.Context) {
	interval := time.Second
	timer := time.NewTimer(interval)
	for {
		timer.Reset(interval) // want `nojitter: retry loop waits the same delay \(interval\)`
		select {
		case <-c.quit:
			return
		case <-timer.C:
		}
		if _, err := c.ping(ctx); err != nil {
			goto reconnect
		}
		interval = 5 * time.Second
		continue

	reconnect:
		interval = time.Second
		c.reconnect(ctx)
	}
}

// Positive: the failure jumps forward to a wait at the end of the body,
// which goes round.
func (c *conn) redial(ctx context.Context) {
	for {
		n, err := c.ping(ctx)
		if err != nil {
			goto wait
		}
		_ = n
		continue
	wait:
		time.Sleep(2 * time.Second) // want `nojitter: retry loop waits a constant 2s between attempts`
	}
}

// Negative: a poll for a state that also goes round on an error; the
// wait after the label is shared by every outcome.
func (c *conn) awaitAgreement(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		n, err := c.ping(ctx)
		if err != nil {
			goto wait
		}
		if n <= 1 {
			return nil
		}
	wait:
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// lazyTimer is a timer of the program's own, made on first use.
type lazyTimer struct{ t *time.Timer }

func (l *lazyTimer) Reset(d time.Duration) {
	if l.t == nil {
		l.t = time.NewTimer(d)
		return
	}
	l.t.Reset(d)
}

func (l *lazyTimer) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-l.t.C:
		return nil
	}
}

type dialOpts struct {
	ReconnectDelay func(try int) time.Duration
}

var defaultDialOpts = dialOpts{
	ReconnectDelay: func(try int) time.Duration { return time.Duration(4+2*try) * time.Second },
}

// Positive: the redial waits through a timer type of its own, for a
// delay from a function-valued option that grows without jitter.
func (c *conn) redialTimer(ctx context.Context, opts *dialOpts) error {
	var retry lazyTimer
	for try := 0; ; try++ {
		_, err := c.ping(ctx)
		if err == nil {
			return nil
		}
		retry.Reset(opts.ReconnectDelay(try)) // want `nojitter: retry loop's delay grows without jitter`
		if err := retry.Wait(ctx); err != nil {
			return err
		}
	}
}

// backoffFunc says how long to wait before attempt n.
type backoffFunc func(attempt int) time.Duration

// newConstantBackoff returns a backoffFunc that waits delay after the
// first attempt.
func newConstantBackoff(delay time.Duration) backoffFunc {
	return func(attempt int) time.Duration {
		if attempt <= 0 {
			return 0
		}
		return delay
	}
}

// newJitteredBackoff returns a backoffFunc that waits up to max at
// random.
func newJitteredBackoff(max time.Duration) backoffFunc {
	return func(attempt int) time.Duration { return rand.N(max) }
}

type clientConfig struct {
	ReconnectBackoff backoffFunc
}

func newClientConfig(cfg clientConfig) clientConfig {
	if cfg.ReconnectBackoff == nil {
		cfg.ReconnectBackoff = newConstantBackoff(10 * time.Second)
	}
	return cfg
}

type jitterConfig struct {
	ReconnectBackoff backoffFunc
}

func newJitterConfig() jitterConfig {
	return jitterConfig{ReconnectBackoff: newJitteredBackoff(10 * time.Second)}
}

// Positive: the delay comes from a function value whose default a
// factory of the package makes: a constant.
func (c *conn) connect(ctx context.Context, cfg clientConfig) error {
	for attempt := 0; ; attempt++ {
		select {
		case <-time.After(cfg.ReconnectBackoff(attempt)): // want `nojitter: retry loop waits the same delay \(cfg.ReconnectBackoff\(attempt\)\)`
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := c.ping(ctx); err == nil {
			return nil
		}
	}
}

// Negative: the factory's function draws at random.
func (c *conn) connectJittered(ctx context.Context, cfg jitterConfig) error {
	for attempt := 0; ; attempt++ {
		select {
		case <-time.After(cfg.ReconnectBackoff(attempt)):
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := c.ping(ctx); err == nil {
			return nil
		}
	}
}

type failedSyncer interface {
	OnFailedSync(err error) (time.Duration, error)
}

type constSyncer struct{}

func (constSyncer) OnFailedSync(err error) (time.Duration, error) { return 10 * time.Second, nil }

// Positive: the failure path calls a closure that waits the delay the
// syncer gives, a constant in the package's only syncer.
func (c *conn) syncLoop(ctx context.Context, s failedSyncer) error {
	onError := func(n int, err error) error {
		d, err := s.OnFailedSync(err)
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	for {
		n, err := c.ping(ctx)
		if err != nil {
			if err = onError(n, err); err != nil { // want `nojitter: retry loop waits, in onError, a delay computed without jitter`
				return err
			}
			continue
		}
		_ = n
	}
}

var errServerBusy = errors.New("busy")

// Positive: a goto back to the attempt when the error says the server
// is busy, after a delay that grows with the time spent, no jitter.
func (c *conn) whileBusy(ctx context.Context) error {
	start := time.Now()
	backoff := 20 * time.Millisecond
again:
	_, err := c.ping(ctx)
	if errors.Is(err, errServerBusy) {
		switch since := time.Since(start); {
		case since > 5*time.Second:
			backoff = time.Second
		case since > time.Second:
			backoff = 200 * time.Millisecond
		}
		select {
		case <-time.After(backoff): // want `nojitter: retry loop's delay grows without jitter`
		case <-ctx.Done():
			return err
		}
		goto again
	}
	return err
}

// Positive: a supervisor that serves a connection until it ends and
// waits a delay it doubles, set back after a long run.
func (c *conn) serveForever(ctx context.Context, stopping *bool) {
	backoff := 2 * time.Second
	last := time.Now()
	for {
		err := c.serve(ctx)
		if err != nil {
			_ = err
		}
		if *stopping {
			return
		}
		if time.Since(last) > time.Minute {
			backoff = 2 * time.Second
		} else {
			backoff *= 2
		}
		last = time.Now()
		<-time.After(backoff) // want `nojitter: retry loop's delay grows without jitter`
	}
}

func (c *conn) serve(ctx context.Context) error { return nil }

// Positive: a token refresh on a timer, re-armed a constant 5s after a
// failed login and at the token's lifetime after a good one.
func (c *conn) refreshLogin(ctx context.Context, ttl time.Duration) {
	timer := time.NewTimer(5 * time.Second)
	for {
		select {
		case <-timer.C:
			_, err := c.ping(ctx)
			if err != nil {
				timer.Reset(5 * time.Second) // want `nojitter: retry loop waits a constant 5s between attempts`
			} else {
				timer.Reset(ttl)
			}
		case <-ctx.Done():
			return
		}
	}
}

// Negative: a consumer that logs a failed read and handles a good one,
// with no wait on either side.
func (c *conn) consume(ctx context.Context) {
	for {
		n, err := c.ping(ctx)
		if err != nil {
			_ = err
		} else {
			_ = n
		}
	}
}

type upload struct{ StatusCode int }

func (c *conn) put(ctx context.Context) (*upload, error) { return &upload{}, nil }

// Positive: the upload succeeds only on a 2xx answer; a bad status is
// turned into an error and retried after 1s, 2s, 3s...
func (c *conn) uploadRetry(ctx context.Context, retries int) error {
	total := retries
	for {
		resp, err := c.put(ctx)
		if err == nil {
			if resp.StatusCode >= 200 && resp.StatusCode < 300 {
				break
			}
			err = errors.New("bad status")
		} else if errors.Is(err, context.Canceled) {
			return err
		}
		if retries <= 0 {
			return err
		}
		backoff := time.Second * time.Duration(total-retries)
		select {
		case <-time.After(backoff): // want `nojitter: retry loop's delay grows without jitter`
		case <-ctx.Done():
			return ctx.Err()
		}
		retries--
	}
	return nil
}
