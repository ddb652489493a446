package a

import (
	"context"
	"errors"
	"time"
)

type write struct {
	fn func(ctx context.Context) error
}

// Positive: the failed writes are tried again every second, for ever.
func retryWrites(ctx context.Context, pending []write) {
	for { // want `unbounded: retry loop has no attempt limit and no deadline`
		time.Sleep(time.Second)
		var failed []write
		for _, w := range pending {
			if err := w.fn(ctx); err != nil {
				failed = append(failed, w)
			}
		}
		pending = failed
	}
}

// Negative: the same, until the context is done.
func retryWritesUntil(ctx context.Context, pending []write) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		var failed []write
		for _, w := range pending {
			if err := w.fn(ctx); err != nil {
				failed = append(failed, w)
			}
		}
		pending = failed
	}
}

type queue struct{}

type entry struct{}

func (queue) Peek() (entry, error)    { return entry{}, nil }
func (queue) Wait() <-chan struct{}   { return nil }
func (entry) Reader() (string, error) { return "", nil }

var errEmpty = errors.New("empty")

// Negative: between two reads of an entry, the round goes on to the
// next round of the outer loop, which waits on the context, when the
// queue is empty.
func sendQueued(ctx context.Context, q queue) error {
outer:
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.Wait():
		}
		for {
			e, err := q.Peek()
			if errors.Is(err, errEmpty) {
				continue outer
			} else if err != nil {
				time.Sleep(time.Second)
				continue
			}
			r, err := e.Reader()
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			_ = publish(ctx, r)
		}
	}
}

func publish(ctx context.Context, s string) error { return nil }

// Negative: the failure path asks a closure, which gives up when the
// context is done, and returns what it says.
func syncUntil(ctx context.Context) error {
	onError := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(time.Second)
		return nil
	}
	for {
		s, err := fetch(ctx)
		if err != nil {
			err = onError(err)
			if err != nil {
				return err
			}
			continue
		}
		_ = s
	}
}

func fetch(ctx context.Context) (string, error) { return "", nil }
