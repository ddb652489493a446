package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// A budget that counts attempts in flight (budget.Concurrency) hears every
// attempt the loop starts end exactly once, whichever way the call ends:
// after each of these calls it counts nothing in flight.
func TestTrackerEveryEnd(t *testing.T) {
	errDown := errors.New("down")
	calls := []struct {
		name string
		run  func(p *retry.Policy) error
	}{
		{"success", func(p *retry.Policy) error {
			return p.Do(context.Background(), func(context.Context) error { return nil })
		}},
		{"attempts exhausted", func(p *retry.Policy) error {
			return p.Do(context.Background(), func(context.Context) error { return errDown })
		}},
		{"success on the retry", func(p *retry.Policy) error {
			n := 0
			return p.Do(context.Background(), func(context.Context) error {
				if n++; n == 1 {
					return errDown
				}
				return nil
			})
		}},
		{"caller gone during an attempt", func(p *retry.Policy) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return p.Do(ctx, func(context.Context) error { cancel(); return errDown })
		}},
		{"caller gone during the retry", func(p *retry.Policy) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			return p.Do(ctx, func(context.Context) error {
				if n++; n == 2 {
					cancel()
				}
				return errDown
			})
		}},
		{"a rejection from inside", func(p *retry.Policy) error {
			return p.Do(context.Background(), func(context.Context) error { return engine.NewRejection("inner: open") })
		}},
		{"a panic", func(p *retry.Policy) (err error) {
			defer func() {
				if recover() != nil {
					err = errors.New("panicked")
				}
			}()
			return p.Do(context.Background(), func(context.Context) error { panic("boom") })
		}},
		{"a panic in an Attempts loop", func(p *retry.Policy) (err error) {
			defer func() {
				if recover() != nil {
					err = errors.New("panicked")
				}
			}()
			for range p.Attempts(context.Background(), &err) {
				panic("boom")
			}
			return err
		}},
		{"a break in an Attempts loop", func(p *retry.Policy) (err error) {
			for range p.Attempts(context.Background(), &err) {
				err = errDown
				break
			}
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			b, err := budget.NewConcurrency(budget.ConcurrencyConfig{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := retry.New(retry.Config{MaxAttempts: 3, Budget: b, Backoff: backoff.Schedule{Base: time.Microsecond}})
			if err != nil {
				t.Fatal(err)
			}
			_ = c.run(p)
			if a, r := b.InFlight(); a != 0 || r != 0 {
				t.Errorf("after the call: %d attempts and %d retries in flight, want none", a, r)
			}
		})
	}
}
