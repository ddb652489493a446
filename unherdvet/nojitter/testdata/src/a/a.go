package a

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"time"
)

func call() error                              { return nil }
func get(ctx context.Context) (int, error)     { return 0, nil }
func page(token string) ([]int, string, error) { return nil, "", nil }
func dial(addr string) (int, error)            { return 0, nil }

type config struct{ Wait time.Duration }

// Positive: the textbook loop.
func constant() error {
	var err error
	for i := 0; i < 3; i++ {
		if err = call(); err == nil {
			return nil
		}
		time.Sleep(time.Second) // want `nojitter: retry loop waits a constant 1s between attempts`
	}
	return err
}

// Positive: continue form, result kept, constant through a named const.
const retryWait = 500 * time.Millisecond

func continueForm(ctx context.Context) (int, error) {
	for attempt := 0; attempt < 5; attempt++ {
		n, err := get(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(retryWait): // want `constant 500ms`
			}
			continue
		}
		return n, nil
	}
	return 0, errors.New("gave up")
}

// Positive: a configured delay, the same on every attempt.
func fixed(c *config) error {
	for i := 0; i < 3; i++ {
		err := call()
		if err == nil {
			break
		}
		time.Sleep(c.Wait) // want `the same delay \(c.Wait\) between every attempt`
	}
	return nil
}

// Positive: exponential growth without jitter.
func doubling() error {
	delay := 100 * time.Millisecond
	for i := 0; i < 5; i++ {
		if err := call(); err == nil {
			return nil
		}
		time.Sleep(delay) // want `delay grows without jitter`
		delay *= 2
	}
	return errors.New("gave up")
}

// Positive: exponential through the counter, capped with min.
func shifted() error {
	for i := range 5 {
		if err := call(); err != nil {
			time.Sleep(min(time.Duration(1<<i)*time.Second, 10*time.Second)) // want `delay grows without jitter`
			continue
		}
		return nil
	}
	return nil
}

// Positive: if/else form; the wait precedes the next attempt.
func elseForm() {
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(2 * time.Second) // want `constant 2s`
		}
		if err := call(); err != nil {
			continue
		} else {
			break
		}
	}
}

// Negative: full jitter.
func jittered() error {
	base := 100 * time.Millisecond
	for i := 0; i < 5; i++ {
		if err := call(); err == nil {
			return nil
		}
		time.Sleep(time.Duration(rand.Int64N(int64(base << i))))
	}
	return nil
}

// Negative: jitter added on top of a doubling delay.
func jitterOnTop() error {
	d := time.Second
	for i := 0; i < 5; i++ {
		if err := call(); err == nil {
			return nil
		}
		j := time.Duration(rand.Int64N(int64(d)))
		time.Sleep(d/2 + j)
		d *= 2
	}
	return nil
}

// Negative: a delay from a function the analyzer does not follow.
type schedule interface{ Next() time.Duration }

func library(s schedule) error {
	for i := 0; i < 5; i++ {
		if err := call(); err == nil {
			return nil
		}
		time.Sleep(s.Next())
	}
	return nil
}

// Negative: a polling loop returns on error and waits after a success
// that is not final.
func polling(ctx context.Context) error {
	for {
		n, err := get(ctx)
		if err != nil {
			return err
		}
		if n > 10 {
			return nil
		}
		time.Sleep(time.Second)
	}
}

// Negative: pagination goes round on success.
func pagination() ([]int, error) {
	var all []int
	token := ""
	for {
		items, next, err := page(token)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		token = next
		time.Sleep(100 * time.Millisecond)
	}
}

// Negative: failover tries each address once.
func failover(addrs []string) (int, error) {
	for _, a := range addrs {
		c, err := dial(a)
		if err == nil {
			return c, nil
		}
		time.Sleep(time.Second)
	}
	return 0, errors.New("no address answered")
}

// Negative: failover by index.
func failoverIndex(addrs []string) (int, error) {
	for i := 0; i < len(addrs); i++ {
		c, err := dial(addrs[i])
		if err == nil {
			return c, nil
		}
		time.Sleep(time.Second)
	}
	return 0, errors.New("no address answered")
}

// Negative: an iterator loop.
type rows struct{}

func (rows) Next() bool  { return false }
func (rows) Scan() error { return nil }
func iterate(r rows) error {
	for r.Next() {
		if err := r.Scan(); err != nil {
			time.Sleep(time.Second)
			continue
		}
		return nil
	}
	return nil
}

// Silenced with a comment on the line above, and at the end of the line.
func silenced() {
	for range 3 {
		if call() == nil {
			return
		}
		//unherdvet:ignore nojitter the peer is a local sidecar
		time.Sleep(time.Second)
	}
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			return
		}
		time.Sleep(time.Second) //unherdvet:ignore nojitter,unbounded local sidecar
	}
	for err := call(); err != nil; err = call() {
		time.Sleep(time.Second) //unherdvet:ignore unbounded names another check // want `constant 1s`
	}
}

var errBusy = errors.New("busy")

// Positive: a condition-driven loop with a fixed wait.
func whileBusy(ctx context.Context, wait time.Duration) error {
	err := call()
	for r := 0; errors.Is(err, errBusy) && r < 3; r++ {
		select {
		case <-ctx.Done():
		case <-time.After(wait): // want `the same delay \(wait\)`
		}
		err = call()
	}
	return err
}

type admin struct{ backoff time.Duration }

func retryable(err error) bool { return true }

// Positive: success and giving up share one exit.
func (a *admin) retryOnError(fn func() error) error {
	for remaining := 3; ; {
		err := fn()
		remaining--
		if err == nil || remaining <= 0 || !retryable(err) {
			return err
		}
		time.Sleep(a.backoff) // want `the same delay \(a.backoff\)`
	}
}

// Positive: only a retryable failure goes round.
func onlyRetryable() error {
	for i := 0; i < 3; i++ {
		err := call()
		if err != nil && retryable(err) {
			time.Sleep(time.Second) // want `constant 1s`
			continue
		}
		return err
	}
	return nil
}

// Negative: a polling loop that tolerates errors waits for done, not
// for a retry.
func pollDone(ctx context.Context) {
	for {
		n, err := get(ctx)
		if err == nil && n > 10 {
			return
		}
		time.Sleep(time.Second)
	}
}

// Negative: an iterator advancing its own index is not a retry.
type batch struct{}

func (batch) Read() (int, error) { return 0, nil }

type multi struct {
	batches []batch
	index   int
}

func (m *multi) Read() (int, error) {
	for {
		if m.index == len(m.batches) {
			return 0, errors.New("eof")
		}
		n, err := m.batches[m.index].Read()
		if err == nil {
			return n, nil
		}
		m.index++
		time.Sleep(time.Millisecond)
	}
}

type pubOpts struct {
	ctx  context.Context
	wait time.Duration
	ttl  time.Duration
}

func request(ttl time.Duration) (int, error) { return 0, nil }

// Positive: the attempt sits in both branches of an if.
func publish(o pubOpts) error {
	_, err := request(o.ttl)
	for r := 0; errors.Is(err, errBusy) && r < 3; r++ {
		if o.ctx != nil {
			select {
			case <-o.ctx.Done():
			case <-time.After(o.wait): // want `the same delay \(o.wait\)`
			}
		} else {
			time.Sleep(o.wait) // want `the same delay \(o.wait\)`
		}
		if o.ttl > 0 {
			_, err = request(o.ttl)
		} else {
			_, err = request(0)
		}
	}
	return err
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Positive: a helper that honours ctx still waits a constant delay.
func viaHelper(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		if !sleep(ctx, 2*time.Second) { // want `constant 2s`
			return ctx.Err()
		}
	}
	return nil
}

// Negative: the helper is given a jittered delay.
func viaHelperJittered(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		if !sleep(ctx, time.Duration(rand.Int64N(int64(time.Second)))) {
			return ctx.Err()
		}
	}
	return nil
}

// Positive: a reconnect loop against a remote address that waits the same
// five seconds after every failed dial, and serves after a success.
func reconnect(addr string) {
	for {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			time.Sleep(5 * time.Second) // want `constant 5s`
			continue
		}
		serve(conn)
	}
}

func serve(net.Conn) {}

// Positive: the success test judges the answer too.
func goodAnswer(c *http.Client, req *http.Request) (*http.Response, error) {
	for i := 0; i < 3; i++ {
		resp, err := c.Do(req)
		if err == nil && !badStatus(resp) {
			return resp, nil
		}
		time.Sleep(2 * time.Second) // want `constant 2s`
	}
	return nil, errors.New("gave up")
}

func badStatus(resp *http.Response) bool { return resp.StatusCode >= 500 }

// Positive: a failure test that goes round on a bad status too.
func badAnswer(c *http.Client, req *http.Request) (*http.Response, error) {
	for i := 0; i < 3; i++ {
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode >= 500 {
			time.Sleep(time.Second) // want `constant 1s`
			continue
		}
		return resp, nil
	}
	return nil, errors.New("gave up")
}

// Positive: a schedule from a list of constant delays.
var steps = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second}

func fromList(ctx context.Context) error {
	for i := range steps {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(steps[i]) // want `delay grows without jitter`
	}
	return nil
}

// Positive: a delay from a helper of the package without randomness.
func delayFor(attempt int) time.Duration {
	return time.Duration(1<<attempt) * 100 * time.Millisecond
}

func viaDelayFunc(ctx context.Context) error {
	for i := 0; i < 4; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(delayFor(i)) // want `delay grows without jitter`
	}
	return nil
}

// Positive: a delay from a method of the client, from its own fields.
type client struct{ min, max time.Duration }

func (c *client) backoff(n int) time.Duration {
	d := c.min << n
	if d > c.max {
		d = c.max
	}
	return d
}

func (c *client) viaMethod(ctx context.Context) error {
	for n := 0; n < 4; n++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(c.backoff(n)) // want `delay grows without jitter`
	}
	return nil
}

// Negative: the helper adds jitter.
func jitteredDelay(attempt int) time.Duration {
	d := time.Duration(1<<attempt) * 100 * time.Millisecond
	return d/2 + time.Duration(rand.Int64N(int64(d/2)))
}

func viaJitteredFunc(ctx context.Context) error {
	for i := 0; i < 4; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(jitteredDelay(i))
	}
	return nil
}

// Positive: a backoff struct whose jitter is left zero.
type stepper struct {
	Duration time.Duration
	Factor   float64
	Jitter   float64
}

func (s *stepper) Step() time.Duration {
	d := s.Duration
	s.Duration = time.Duration(float64(s.Duration) * s.Factor)
	return d
}

func zeroJitter(ctx context.Context) error {
	b := &stepper{Duration: time.Second, Factor: 2}
	for i := 0; i < 4; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(b.Step()) // want `delay grows without jitter`
	}
	return nil
}

// Negative: the same struct with jitter set.
func withJitter(ctx context.Context) error {
	b := &stepper{Duration: time.Second, Factor: 2, Jitter: 0.5}
	for i := 0; i < 4; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(b.Step())
	}
	return nil
}

// Positive: a retry by goto.
func viaGoto(ctx context.Context) (int, error) {
	tries := 0
again:
	n, err := get(ctx)
	if err != nil && tries < 3 {
		tries++
		time.Sleep(time.Second) // want `constant 1s`
		goto again
	}
	return n, err
}

// Positive: a retry by recursion.
func (c *client) send(ctx context.Context, left int) (int, error) {
	n, err := get(ctx)
	if err != nil && left > 0 {
		time.Sleep(3 * time.Second) // want `constant 3s`
		return c.send(ctx, left-1)
	}
	return n, err
}

// Negative: a local port retried on "address in use".
func listen(addr string) (net.Listener, error) {
	for i := 0; i < 5; i++ {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, errors.New("port busy")
}

// Negative: a local file removed again while busy.
func removeBusy(path string) error {
	var err error
	for i := 0; i < 5; i++ {
		if err = os.Remove(path); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// Negative: polling for a lock file, through a helper of the package,
// with the context respected.
func tryLock(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

func lock(ctx context.Context, path string) error {
	for {
		err := tryLock(path)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Negative: a poll at the interval the server gave (OAuth device flow),
// slowed down when it asks.
type deviceCode struct {
	Code     string
	Interval int
}

type token struct{ Access string }

var errPending = errors.New("authorization_pending")
var errSlowDown = errors.New("slow_down")

func requestCode(ctx context.Context) (*deviceCode, error)      { return nil, nil }
func exchange(ctx context.Context, code string) (*token, error) { return nil, nil }

func deviceLogin(ctx context.Context) (*token, error) {
	dc, err := requestCode(ctx)
	if err != nil {
		return nil, err
	}
	interval := time.Duration(dc.Interval) * time.Second
	for {
		tok, err := exchange(ctx, dc.Code)
		if err == nil {
			return tok, nil
		}
		if errors.Is(err, errSlowDown) {
			interval += 5 * time.Second
		} else if !errors.Is(err, errPending) {
			return nil, err
		}
		time.Sleep(interval)
	}
}

// Positive: a range over the delays themselves.
func overDelays(ctx context.Context) error {
	for _, d := range steps {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(d) // want `delay grows without jitter`
	}
	return nil
}

// Positive: a backoff controller that sleeps a doubling delay of its own.
type controller struct{ last, max time.Duration }

func (b *controller) next() (time.Duration, bool) {
	if b.last == 0 {
		return time.Second, false
	}
	return min(b.last*2, b.max), true
}

func (b *controller) sleepWithBackoff() time.Duration {
	d, _ := b.next()
	b.last = d
	time.Sleep(d)
	return d
}

func reconnectWith(addr string, b *controller) net.Conn {
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			return conn
		}
		b.sleepWithBackoff() // want `retry loop waits, in b.sleepWithBackoff, a delay computed without jitter`
	}
}

// Negative: a controller that sleeps a jittered delay.
type jitteredController struct{ base time.Duration }

func (b *jitteredController) pause() {
	time.Sleep(b.base/2 + rand.N(b.base))
}

func reconnectJittered(addr string, b *jitteredController) net.Conn {
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			return conn
		}
		b.pause()
	}
}

// Positive: a consumer loop never leaves on success, but on a failure of
// the remote call it waits the same second as every other consumer.
func consume(ctx context.Context) {
	for {
		n, err := get(ctx)
		if err != nil {
			time.Sleep(time.Second) // want `constant 1s`
			continue
		}
		_ = n
	}
}
