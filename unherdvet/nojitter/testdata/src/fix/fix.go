package fix

import (
	"context"
	"time"
)

func get(ctx context.Context) (int, error) { return 0, nil }

const pause = 500 * time.Millisecond

// Fixed: a constant expression.
func sleeps(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(2 * time.Second) // want `constant 2s`
	}
	return nil
}

// Fixed: a named constant in a select.
func selects(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause): // want `constant 500ms`
		}
	}
	return nil
}

// Fixed: an untyped number of nanoseconds.
func untyped(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(1e9) // want `constant 1s`
	}
	return nil
}

// Not fixed: the delay is not a constant.
func fixed(ctx context.Context, d time.Duration) error {
	for i := 0; i < 3; i++ {
		if _, err := get(ctx); err == nil {
			return nil
		}
		time.Sleep(d) // want `the same delay \(d\)`
	}
	return nil
}
