package a

import (
	"context"
	"net/http"
	"time"
)

func get(ctx context.Context) (int, error) { return 0, nil }
func call() error                          { return nil }

// Positive: ctx is right there.
func ignores(ctx context.Context) (int, error) {
	var err error
	for i := 0; i < 3; i++ {
		var n int
		if n, err = get(ctx); err == nil {
			return n, nil
		}
		time.Sleep(time.Second) // want `sleepctx: retry loop waits with time.Sleep although ctx is in scope`
	}
	return 0, err
}

// Positive: a bare receive from time.After.
func bareAfter(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			return nil
		}
		<-time.After(time.Second) // want `waits with <-time.After although ctx is in scope`
	}
	return nil
}

// Positive: a handler's request carries a context.
func handler(w http.ResponseWriter, r *http.Request) {
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			return
		}
		time.Sleep(time.Second) // want `although r.Context\(\) is in scope`
	}
}

// Positive: a closure sees the outer ctx.
func closure(ctx context.Context) {
	f := func() {
		for i := 0; i < 3; i++ {
			if err := call(); err == nil {
				return
			}
			time.Sleep(time.Second) // want `although ctx is in scope`
		}
	}
	f()
}

// Negative: select on ctx.Done().
func selects(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return nil
}

// Negative: no context in scope.
func noContext() {
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			return
		}
		time.Sleep(time.Second)
	}
}

// Negative: a sleep in a polling loop, not a retry loop.
func poll(ctx context.Context) error {
	for {
		n, err := get(ctx)
		if err != nil || n > 0 {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Negative: a sleep after success, not between attempts.
func afterSuccess(ctx context.Context) {
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			time.Sleep(time.Second)
			return
		}
	}
}

// Negative: the only context is the attempt's own.
func perAttempt() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := get(ctx)
		cancel()
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		return
	}
}

type backend struct{ c *http.Client }

func (b *backend) shouldRetry(err error, n int) bool { return err != nil && n < 3 }

// Positive: the loop asks a predicate whether to retry, and sleeps past
// the request's context.
func (b *backend) do(req *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	for n := 0; ; {
		resp, err = b.c.Do(req)
		retry := b.shouldRetry(err, n)
		if !retry {
			break
		}
		n++
		time.Sleep(time.Duration(n) * 100 * time.Millisecond) // want `although req.Context\(\) is in scope`
	}
	return resp, err
}

func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Second)
}

// Negative: the loop means to outlive its caller: each attempt runs
// under a context detached from ctx.
func complete(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		actx, cancel := detach(ctx)
		_, err := get(actx)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return nil
}

// Positive: each attempt is bounded by a timeout under ctx, but the
// sleep is not.
func perAttemptUnderCtx(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := get(actx)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(time.Second) // want `although ctx is in scope`
	}
	return nil
}

func wait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Negative: the wait goes through a helper that honours ctx.
func viaHelper(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			return nil
		}
		if err := wait(ctx, time.Second); err != nil {
			return err
		}
	}
	return nil
}

// Positive: a reconnect loop with a context in scope sleeps through
// cancellation.
func reconnect(ctx context.Context) {
	for {
		n, err := get(ctx)
		if err != nil {
			time.Sleep(time.Second) // want `sleepctx: retry loop waits with time.Sleep although ctx is in scope`
			continue
		}
		_ = n
	}
}

// Negative: a context that is only ever context.TODO() is never done;
// nobody can give up through it.
func todoContext(recv func(context.Context) error) {
	ctx := context.TODO()
	for {
		if err := recv(ctx); err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return
	}
}

type logger struct{}

// WithContext returns ctx carrying the logger.
func (logger) WithContext(ctx context.Context) context.Context { return ctx }

// Negative: a context made from context.Background() for a logger and a
// value can never be done either.
func loggedBackground(l logger, recv func(context.Context) error) {
	ctx := l.WithContext(context.Background())
	ctx = context.WithValue(ctx, logger{}, "state")
	for {
		if err := recv(ctx); err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return
	}
}

// Positive: one that can be cancelled is.
func cancellable(recv func(context.Context) error) func() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if err := recv(ctx); err != nil {
				time.Sleep(100 * time.Millisecond) // want `sleepctx: retry loop waits with time.Sleep although ctx is in scope`
				continue
			}
			return
		}
	}()
	return cancel
}

// Positive: the caller's context, given a value, is still the caller's.
func callersWithValue(ctx context.Context, l logger, recv func(context.Context) error) {
	ctx = l.WithContext(ctx)
	for {
		if err := recv(ctx); err != nil {
			time.Sleep(100 * time.Millisecond) // want `sleepctx: retry loop waits with time.Sleep although ctx is in scope`
			continue
		}
		return
	}
}
