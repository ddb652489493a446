package unherdprom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/breaker"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/observecheck"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/throttle"
	"github.com/unherd/unherd/unherdprom"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = observecheck.ErrDown

// run drives a retry policy, a hedger, a breaker and a throttle, all
// observed as "payments", through a known sequence.
func run(t *testing.T, o observe.Observer) {
	ctx := context.Background()
	// Retries: 3 calls that fail twice then succeed (6 retries, delays
	// 1+2 ms each), then calls that always fail until the budget (a token
	// bucket of 12 tokens, 5 a retry) stops them.
	tb, err := budget.NewTokenBucket(budget.TokenBucketConfig{Capacity: 12, TransientCost: 5, ThrottledCost: 5, TimeoutCost: 5})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		observecheck.RetriedTwice(t, ctx, o, time.Millisecond)
	}
	q, err := retry.New(retry.Config{Observer: o, Budget: tb, MaxAttempts: 2, Backoff: backoff.Schedule{Immediate: true}})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		_ = q.Do(ctx, func(context.Context) error { return retry.Judge(errDown, retry.Verdict{Class: failure.Throttled}) })
	}
	// Hedges: one won, one lost.
	h, err := hedge.New(hedge.Config{Delay: time.Millisecond, MaxHedges: 1, Budget: budget.Unlimited, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	for _, hedgeWins := range []bool{true, false} {
		_, err := hedge.Do(ctx, h, func(ctx context.Context, attempt int) (int, error) {
			switch {
			case hedgeWins == (attempt == 1):
				if !hedgeWins {
					time.Sleep(5 * time.Millisecond) // the primary, slower than the delay
				}
				return attempt, nil
			default:
				<-ctx.Done()
				return 0, ctx.Err()
			}
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	// A breaker that opens after two failures.
	b, err := breaker.New(breaker.Settings{ConsecutiveFailures: 2, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if done, err := b.Allow(); err == nil {
			done(errDown)
		}
	}
	// A throttle fed nothing but failures.
	a, err := throttle.NewAdaptive(throttle.AdaptiveSettings{Observer: o, Rand: seeded{}})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if tk, err := a.Admit(ctx); err == nil {
			a.Done(context.Background(), tk, admission.Outcome{Err: errDown, Class: failure.Transient})
		}
	}
	// A rate limiter, the only guard of a policy that is not observed
	// itself: a throttled call cuts its rate to 0.5 tokens/s, the next
	// call waits 2 s for a token (virtual time), and a call with a
	// 100 ms deadline is rejected (the rate has grown to 1.6/s: a 625 ms
	// wait).
	rl, err := throttle.NewRateLimiter(throttle.RateLimiterSettings{Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	g, err := retry.New(retry.Config{MaxAttempts: 1, Guards: []admission.Guard{rl}})
	if err != nil {
		t.Fatal(err)
	}
	_ = g.Do(ctx, func(context.Context) error { return retry.Judge(errDown, retry.Verdict{Class: failure.Throttled}) })
	if err := g.Do(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := g.Do(short, func(context.Context) error { return nil }); !errors.Is(err, throttle.ErrRateLimited) {
		t.Fatalf("rate limited call: %v", err)
	}
}

// seeded is a fixed sequence of draws, so the throttle rejects the same
// calls every run.
type seeded struct{}

var draws uint64

func (seeded) Uint64() uint64 { draws = draws*6364136223846793005 + 1442695040888963407; return draws }

func TestScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := unherdprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Under synctest the hedges' delays pass in virtual time.
	synctest.Test(t, func(t *testing.T) { run(t, m.Observer("payments")); synctest.Wait() })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	if path := os.Getenv("UNHERD_SCRAPE_OUT"); path != "" {
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		// 3 calls of 3 attempts; then 2 calls of 2 attempts (a retry
		// each, 5 tokens of the 12) and 2 calls the budget stops after one.
		`unherd_retry_attempts_total{policy="payments"} 15`,
		`unherd_retry_retries_total{class="transient",policy="payments"} 6`,
		`unherd_retry_delay_seconds_total{policy="payments"} 0.009`, // 3 x (1+2) ms
		`unherd_retry_calls_total{outcome="success",policy="payments"} 3`,
		`unherd_retry_calls_total{outcome="budget_exhausted",policy="payments"} 2`,
		`unherd_retry_calls_total{outcome="attempts_exhausted",policy="payments"} 2`,
		`unherd_hedge_started_total{policy="payments"} 2`,
		`unherd_hedge_calls_total{policy="payments",result="won"} 1`,
		`unherd_hedge_calls_total{policy="payments",result="lost"} 1`,
		`unherd_breaker_transitions_total{from="closed",policy="payments",to="open"} 1`,
		`unherd_breaker_state{policy="payments",state="open"} 1`,
		`unherd_breaker_state{policy="payments",state="closed"} 0`,
		`# TYPE unherd_throttle_rejections_total counter`,
		`# TYPE unherd_throttle_rejection_probability gauge`,
		`unherd_rate_limiter_cuts_total{policy="payments"} 1`,
		`unherd_rate_limiter_delayed_total{policy="payments"} 1`,
		`unherd_rate_limiter_delay_seconds_total{policy="payments"} 2`,
		`unherd_rate_limiter_rejections_total{policy="payments"} 1`,
		`unherd_rate_limiter_fill_rate{policy="payments"} 1.6`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	// A state never changes into itself, so no series says it did.
	for _, state := range []string{"closed", "open", "half-open"} {
		if self := fmt.Sprintf(`from=%q,policy="payments",to=%q`, state, state); strings.Contains(text, self) {
			t.Errorf("scrape has a transition from %s to itself", state)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := unherdprom.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := unherdprom.New(reg); err == nil {
		t.Error("a second New on one registry succeeded")
	}
}

func TestNoAllocation(t *testing.T) {
	m, err := unherdprom.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	observecheck.NoAllocation(t, "prometheus", m.Observer("x"))
}

// BenchmarkEvent is one event of each kind through the Prometheus
// observer.
func BenchmarkEvent(b *testing.B) {
	m, err := unherdprom.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	observecheck.BenchmarkEvents(b, "", m.Observer("x"))
}

// BenchmarkCalls is observecheck.BenchmarkCalls with the Prometheus
// observer: a first-attempt success (2 events), a call that fails twice
// with zero delays (6 events) and a hedged call (2 events).
func BenchmarkCalls(b *testing.B) {
	m, err := unherdprom.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	observecheck.BenchmarkCalls(b, "prometheus", m.Observer("bench"))
}
