package a

import (
	"context"
	"errors"
	"time"
)

var errNoGroup = errors.New("no such group")

type streamQueue struct{}

func (q *streamQueue) read(ctx context.Context) ([]string, error) { return nil, nil }
func (q *streamQueue) createGroup(ctx context.Context)            {}
func (q *streamQueue) logFailure(ctx context.Context)             {}

// Negative: on the error that says the group is missing, the function
// creates it and reads again: a state change, after which the error does
// not come back.
func (q *streamQueue) reserve(ctx context.Context) ([]string, error) {
	msgs, err := q.read(ctx)
	if err != nil {
		if errors.Is(err, errNoGroup) {
			q.createGroup(ctx)
			return q.reserve(ctx)
		}
		return nil, err
	}
	return msgs, nil
}

// Positive: the same shape with nothing created: it only waits and reads
// again, for as long as the error lasts.
func (q *streamQueue) reserveAgain(ctx context.Context) ([]string, error) {
	msgs, err := q.read(ctx)
	if err != nil {
		if errors.Is(err, errNoGroup) {
			q.logFailure(ctx)
			time.Sleep(time.Second)
			return q.reserveAgain(ctx) // want `unbounded: retry loop has no attempt limit and no deadline`
		}
		return nil, err
	}
	return msgs, nil
}
