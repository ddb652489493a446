package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// A driver that forgets Admit would never count an attempt, and retry
// until its deadline (2,728 attempts in 3 s with no budget): the first
// failure it reports panics instead, saying what to do.
func TestFailureWithoutAdmitPanics(t *testing.T) {
	p, err := retry.New(retry.Config{MaxAttempts: 3, Budget: budget.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	for _, report := range []struct {
		name string
		fn   func(c *engine.Call)
	}{
		{"Done", func(c *engine.Call) { c.Done(time.Time{}, time.Time{}, errors.New("down"), 0) }},
		{"Failed", func(c *engine.Call) { _ = c.Failed(context.Background(), errors.New("down")) }},
	} {
		t.Run(report.name, func(t *testing.T) {
			c := engine.Begin(context.Background(), p)
			defer func() {
				r := recover()
				if e, ok := r.(error); !ok || !strings.Contains(e.Error(), "without Call.Admit") {
					t.Fatalf("recovered %v, want the panic that names Call.Admit", r)
				}
			}()
			report.fn(&c)
		})
	}
}

// Only an attempt's first End counts: the timeout source hears of it
// once, and a later End returns its error as it is.
func TestEndTwice(t *testing.T) {
	src := &countingSource{}
	p, err := retry.New(retry.Config{Timeouts: src})
	if err != nil {
		t.Fatal(err)
	}
	a := engine.StartAttempt(context.Background(), p)
	down := errors.New("down")
	first := a.End(down)
	second := a.End(down)
	if src.n != 1 {
		t.Errorf("the timeout source heard %d ends, want 1", src.n)
	}
	if !errors.Is(first, down) || second != down {
		t.Errorf("End returned %v, then %v; want down, then down as it is", first, second)
	}
}

// countingSource is a timeout.Source with no timeout that counts what it
// is told.
type countingSource struct{ n int }

func (s *countingSource) AttemptTimeout() time.Duration { return 0 }
func (s *countingSource) Observe(time.Duration, bool)   { s.n++ }
