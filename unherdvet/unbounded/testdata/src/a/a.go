package a

import (
	"context"
	"errors"
	"log"
	"net"
	"testing"
	"time"
)

var errStop = errors.New("stop")

func call() error                          { return nil }
func get(ctx context.Context) (int, error) { return 0, nil }
func retryable(err error) bool             { return true }

// Positive: nothing but success ends it.
func forever() {
	for { // want `unbounded: retry loop has no attempt limit and no deadline`
		if err := call(); err != nil {
			log.Print(err)
			time.Sleep(time.Second)
			continue
		}
		return
	}
}

// Positive: permanent errors end it, transient ones never do.
func untilPermanent(ctx context.Context) (int, error) {
	for { // want `no attempt limit and no deadline`
		n, err := get(ctx)
		if err == nil {
			return n, nil
		}
		if !retryable(err) || errors.Is(err, errStop) {
			return 0, err
		}
		time.Sleep(time.Second)
	}
}

// Positive: a spin without a wait.
func spin() {
	for err := call(); err != nil; err = call() { // want `no wait`
	}
	for { // want `no wait`
		if call() == nil {
			break
		}
	}
}

// Negative: an attempt counter in the condition.
func counted() (err error) {
	for left := 3; left > 0; left-- {
		err = call()
		if err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	return err
}

// Negative: a range over an integer.
func ranged() {
	for range 3 {
		if call() == nil {
			return
		}
	}
}

// Negative: a counter checked in the body.
func checked() error {
	attempts := 0
	for {
		err := call()
		if err == nil {
			return nil
		}
		attempts++
		if attempts >= 5 {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Negative: a deadline.
func deadline() error {
	start := time.Now()
	for {
		err := call()
		if err == nil {
			return nil
		}
		if time.Since(start) > time.Minute {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Negative: the context ends it.
func withContext(ctx context.Context) (int, error) {
	for {
		n, err := get(ctx)
		if err == nil {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Negative: the loop condition watches the context.
func ctxCond(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := call(); err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return ctx.Err()
}

// Positive: a worker loop that nothing stops retries on every failure.
func worker(ctx context.Context) {
	for { // want `reconnect loop has nothing that stops it`
		n, err := get(ctx)
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		log.Print(n)
	}
}

// Silenced.
func reconnect() {
	//unherdvet:ignore unbounded the process has nothing to do until it connects
	for {
		if err := call(); err == nil {
			return
		}
		time.Sleep(time.Second)
	}
}

var errBusy = errors.New("busy")

// Positive: the condition retries while the error says busy.
func whileBusy() error {
	err := call()
	for errors.Is(err, errBusy) { // want `no attempt limit and no deadline`
		time.Sleep(time.Second)
		err = call()
	}
	return err
}

// Negative: the same, with an attempt limit in the condition.
func whileBusyCounted() error {
	err := call()
	for r := 0; errors.Is(err, errBusy) && r < 3; r++ {
		time.Sleep(time.Second)
		err = call()
	}
	return err
}

func put(key string) error                 { return nil }
func build(parts ...string) error          { return nil }
func create(prefix string, n int64) string { return prefix }

var errExists = errors.New("exists")

// Negative: a search that grows its input until the call accepts it.
func search() {
	parts := []string{"a"}
	for err := build(parts...); err != nil; parts = append(parts, "x") {
		err = build(parts...)
	}
}

// Negative: a new key on each conflict is a new operation, not a retry.
func uniqueKey(prefix string) error {
	for {
		key := create(prefix, time.Now().UnixNano())
		err := put(key)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errExists) {
			return err
		}
	}
}

// Positive: giving up only on a permanent error is no bound.
func untilPermanentOr(ctx context.Context) error {
	for { // want `no attempt limit and no deadline`
		_, err := get(ctx)
		if err == nil || !retryable(err) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Negative: giving up is in the same condition as success.
func sharedExit() error {
	remaining := 3
	for {
		err := call()
		remaining--
		if err == nil || remaining == 0 {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Positive: a decision computed from the error, no bound.
func decided() error {
	for { // want `no attempt limit and no deadline`
		err := call()
		needsRetry := err != nil && retryable(err)
		if !needsRetry {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Negative: walking an error's chain is not a retry.
func chain(err error) bool {
	for err != nil {
		if errors.Is(err, errBusy) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}

func walk(err error) int {
	n := 0
	for err != nil {
		n++
		err = errors.Unwrap(err)
	}
	return n
}

// Positive: a goto that jumps back for ever.
func gotoForever(ctx context.Context) int {
again:
	n, err := get(ctx)
	if err != nil {
		time.Sleep(time.Second)
		goto again // want `no attempt limit and no deadline`
	}
	return n
}

// Negative: a goto with a counter.
func gotoCounted(ctx context.Context) (int, error) {
	tries := 0
again:
	n, err := get(ctx)
	if err != nil {
		if tries == 3 {
			return 0, err
		}
		tries++
		time.Sleep(time.Second)
		goto again
	}
	return n, nil
}

// Positive: a function that calls itself again on every failure.
func fetchForever(ctx context.Context) (int, error) {
	n, err := get(ctx)
	if err != nil {
		time.Sleep(time.Second)
		return fetchForever(ctx) // want `no attempt limit and no deadline`
	}
	return n, nil
}

// Negative: the recursion counts down.
func fetchN(ctx context.Context, left int) (int, error) {
	n, err := get(ctx)
	if err != nil && left > 0 {
		time.Sleep(time.Second)
		return fetchN(ctx, left-1)
	}
	return n, err
}

// Negative: a fallback calls itself on something else, once.
func lookup(ctx context.Context, name string) (int, error) {
	n, err := get(ctx)
	if err != nil {
		return lookup(ctx, "default")
	}
	return n, nil
}

// Negative: a reconnect loop that stops with its context.
func reconnectUntilDone(ctx context.Context) {
	for {
		n, err := get(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		log.Print(n)
	}
}

// Negative: a test helper that fails the test at a deadline.
func waitReady(t *testing.T, ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := get(ctx); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var errClosed = errors.New("pool: closed")

func receive() error { return nil }

// Negative: the loop leaves when the attempt says its owner closed it
// (the pool's ErrClosed, net.ErrClosed): closing it stops the loop.
func untilClosed() {
	for {
		err := receive()
		if err != nil {
			if err == errClosed {
				return
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
	}
}

// Negative: the same with a package-qualified sentinel.
func untilNetClosed(c net.Conn) {
	buf := make([]byte, 1)
	for {
		_, err := c.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
	}
}
