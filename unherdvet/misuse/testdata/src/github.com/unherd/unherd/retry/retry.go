// Package retry is a stub of unherd's retry for the tests.
package retry

import (
	"context"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
)

type Config struct {
	MaxAttempts int
	Backoff     backoff.Schedule
	Budget      budget.Budget
}

type Policy struct{}

func New(Config) (*Policy, error) { return &Policy{}, nil }
func Default() *Policy            { return &Policy{} }

func (*Policy) Do(ctx context.Context, fn func(context.Context) error) error { return nil }

func DoValue[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	return fn(ctx)
}
