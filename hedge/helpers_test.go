package hedge

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/configtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t testing.TB, cfg Config) *Hedger { return configtest.Must(New(cfg))(t) }

// outcome is how a scripted attempt ends.
type outcome struct {
	after time.Duration // when it answers, from its own start
	value int
	err   error
}

// script runs scripted attempts and remembers, per attempt, when it
// started (since the script's creation) and the context cause it saw
// when it ended early. Attempts for which ignore returns true run to
// their scripted end whatever their context says (to produce late
// results).
type script struct {
	t0       time.Time
	outcomes []outcome
	ignore   func(attempt int) bool

	mu      sync.Mutex
	started map[int]time.Duration
	causes  map[int]error
}

func newScript(outcomes ...outcome) *script {
	return &script{t0: time.Now(), outcomes: outcomes, started: map[int]time.Duration{}, causes: map[int]error{}}
}

func (s *script) fn(ctx context.Context, attempt int) (int, error) {
	s.mu.Lock()
	s.started[attempt] = time.Since(s.t0)
	s.mu.Unlock()
	o := s.outcomes[attempt]
	t := time.NewTimer(o.after)
	defer t.Stop()
	done := ctx.Done()
	if s.ignore != nil && s.ignore(attempt) {
		done = nil
	}
	select {
	case <-t.C:
		return o.value, o.err
	case <-done:
		s.mu.Lock()
		s.causes[attempt] = context.Cause(ctx)
		s.mu.Unlock()
		return 0, ctx.Err()
	}
}

func (s *script) startedAt() map[int]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]time.Duration{}
	for k, v := range s.started {
		out[k] = v
	}
	return out
}

func (s *script) causeOf(attempt int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.causes[attempt]
}

// drain lets virtual time run on until every attempt still running has
// ended (all scripted latencies are well under a minute); it must be
// called inside a synctest bubble.
func drain() {
	time.Sleep(time.Minute)
	synctest.Wait()
}

func always(int) bool { return true }
