package a

import (
	"context"
	"net"
	"time"
)

// Negative: an accept loop on the server's own listener ends when the
// listener is closed (a permanent error); it serves, it does not retry.
func acceptUntilClosed(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(interface{ Temporary() bool }); ok && ne.Temporary() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return
		}
		go c.Close()
	}
}

// Negative: the attempt sits in the ticker's case of a select whose
// other case ends the loop with the context.
func upkeep(ctx context.Context, t *time.Ticker) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := get(ctx)
			if err != nil {
				continue
			}
			_ = n
		}
	}
}

// Positive: the same without the context's case.
func upkeepForever(ctx context.Context, t *time.Ticker) {
	for { // want `unbounded: retry loop has no attempt limit, no deadline and no wait of its own`
		select {
		case <-t.C:
			n, err := get(ctx)
			if err != nil {
				continue
			}
			_ = n
		}
	}
}

var _ net.Conn

// Positive: the loop only calls pullOnce, which waits and returns when
// its attempt fails; nothing ends the loop.
func pullForever() {
	for { // want `unbounded: reconnect loop has nothing that stops it`
		pullOnce(context.TODO())
	}
}

func pullOnce(ctx context.Context) {
	if err := call(); err != nil {
		time.Sleep(time.Second)
		return
	}
	_, _ = get(ctx)
}

// Negative: the same, until a stop flag is set.
func pullUntilStopped(stop *bool) {
	for !*stop {
		pullOnce(context.TODO())
	}
}

// Positive: a pull loop that goes back to the label at the top of its
// body on failure, with nothing that ends it.
func pullLoopForever() {
	for { // want `unbounded: reconnect loop has nothing that stops it`
	next:
		time.Sleep(time.Second)
		n, err := get(context.TODO())
		if err != nil {
			goto next
		}
		_ = n
	}
}

// Negative: a pull loop that checks a done channel on its way back to
// the label.
func pullLoopDone(done chan struct{}) {
	for {
	next:
		n, err := get(context.TODO())
		if err != nil {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			goto next
		}
		_ = n
	}
}

func send(ctx context.Context, key string) error { return nil }

// Negative: a consumer takes the next key from its channel each round;
// a failed send moves on to the next key, it does not retry this one.
func consumeKeys(ctx context.Context, in <-chan string) {
	for {
		key := <-in
		if err := send(ctx, key); err != nil {
			continue
		}
	}
}

// Positive: the same key sent again and again.
func sendForever(ctx context.Context, key string) {
	for { // want `unbounded: retry loop has no attempt limit, no deadline and no wait of its own`
		if err := send(ctx, key); err != nil {
			continue
		}
	}
}
