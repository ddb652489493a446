package a

import (
	"context"
	"errors"
	"io"
	"strings"
)

func isDone(ctx context.Context) bool { return ctx.Err() != nil }

// Negative: the loop goes round at once only on an end of stream (a
// connection already closed); no request reaches the service, and the
// other errors end the loop.
func pumpUntilEOF(ctx context.Context) error {
	for !isDone(ctx) {
		n, err := fetch(ctx, "chan")
		if err != nil {
			if strings.HasSuffix(err.Error(), "EOF") {
				continue
			}
			return err
		}
		_ = n
	}
	return nil
}

// Negative: the same with errors.Is.
func pumpUntilEOFIs(ctx context.Context) error {
	for !isDone(ctx) {
		n, err := fetch(ctx, "chan")
		if err != nil {
			if errors.Is(err, io.EOF) {
				continue
			}
			return err
		}
		_ = n
	}
	return nil
}

// Positive: going round at once on every other error is still a hot loop.
func pumpAll(ctx context.Context) error {
	for !isDone(ctx) { // want `nodelay: retry loop tries again at once`
		n, err := fetch(ctx, "chan")
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			continue
		}
		_ = n
	}
	return nil
}
