package chaos_test

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/chaos"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/retry/engine"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t *testing.T, cfg chaos.Config) *chaos.Injector {
	t.Helper()
	return configtest.Must(chaos.New(cfg))(t)
}

func TestValidate(t *testing.T) {
	row := configtest.Row[chaos.Config]
	configtest.Check(t, chaos.ErrInvalidConfig, configtest.New(chaos.New), []configtest.Case[chaos.Config]{
		row("zero", chaos.Config{}, true),
		row("rates that add up to 1", chaos.Config{Faults: chaos.Faults{ErrorRate: 0.5, ResetRate: 0.25, StatusRate: 0.25}}, true),
		row("rates above 1 in all", chaos.Config{Faults: chaos.Faults{ErrorRate: 0.6, StatusRate: 0.6}}, false),
		row("negative rate", chaos.Config{Faults: chaos.Faults{ResetRate: -0.1}}, false),
		row("NaN rate", chaos.Config{Faults: chaos.Faults{ErrorRate: math.NaN()}}, false),
		row("not a status", chaos.Config{Faults: chaos.Faults{StatusRate: 1, Status: 42}}, false),
		row("negative Retry-After", chaos.Config{Faults: chaos.Faults{RetryAfter: -time.Second}}, false),
		row("empty phase", chaos.Config{Phases: []chaos.Phase{{From: time.Second, To: time.Second}}}, false),
		row("phase before 0", chaos.Config{Phases: []chaos.Phase{{From: -time.Second, To: time.Second}}}, false),
		row("bad phase faults", chaos.Config{Phases: []chaos.Phase{{To: time.Second, Faults: chaos.Faults{ErrorRate: 2}}}}, false),
	})
}

// outcome runs one call of a wrapped function and names what it got.
func outcome(fn func(context.Context) (int, error)) string {
	_, err := fn(context.Background())
	var se *chaos.StatusError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &se):
		return "status"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, chaos.ErrInjected):
		return "error"
	}
	return err.Error()
}

func TestRatesAndDeterminism(t *testing.T) {
	const n = 20000
	cfg := chaos.Config{Seed: 7, Faults: chaos.Faults{ErrorRate: 0.1, ResetRate: 0.05, StatusRate: 0.2}}
	run := func(seed uint64) ([]string, chaos.Counts) {
		c := cfg
		c.Seed = seed
		inj := mustNew(t, c)
		fn := chaos.Wrap(inj, func(context.Context) (int, error) { return 1, nil })
		got := make([]string, n)
		for i := range got {
			got[i] = outcome(fn)
		}
		return got, inj.Counts()
	}
	a, counts := run(7)
	b, _ := run(7)
	c, _ := run(8)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Error("the same seed gave different faults")
	}
	if strings.Join(a, ",") == strings.Join(c, ",") {
		t.Error("different seeds gave the same faults")
	}
	tally := map[string]int{}
	for _, o := range a {
		tally[o]++
	}
	for name, want := range map[string]float64{"error": 0.1, "reset": 0.05, "status": 0.2, "ok": 0.65} {
		// Four standard deviations of a binomial count.
		if got, sd := float64(tally[name]), math.Sqrt(n*want*(1-want)); math.Abs(got-n*want) > 4*sd {
			t.Errorf("%s: %v of %d calls, want about %v", name, got, n, n*want)
		}
	}
	if counts.Calls != n || counts.Errors != int64(tally["error"]) || counts.Resets != int64(tally["reset"]) || counts.Statuses != int64(tally["status"]) {
		t.Errorf("Counts() = %+v, tally %v", counts, tally)
	}
}

// TestPhases: no faults, then an outage from 10 s to 16 s, then a
// brown-out of one call in two until 30 s, then none.
func TestPhases(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := now
	inj := mustNew(t, chaos.Config{
		Now: func() time.Time { return now },
		Phases: []chaos.Phase{
			{From: 10 * time.Second, To: 16 * time.Second, Faults: chaos.Faults{StatusRate: 1}},
			{From: 16 * time.Second, To: 30 * time.Second, Faults: chaos.Faults{ErrorRate: 0.5}},
		},
	})
	fn := chaos.Wrap(inj, func(context.Context) (int, error) { return 1, nil })
	tally := func(at time.Duration, n int) map[string]int {
		now = start.Add(at)
		m := map[string]int{}
		for range n {
			m[outcome(fn)]++
		}
		return m
	}
	if got := tally(0, 100); got["ok"] != 100 {
		t.Errorf("before the outage: %v, want 100 ok", got)
	}
	if got := tally(10*time.Second, 100); got["status"] != 100 {
		t.Errorf("in the outage: %v, want 100 statuses", got)
	}
	if got := tally(20*time.Second, 1000); got["error"] < 400 || got["error"] > 600 {
		t.Errorf("in the brown-out: %v, want about 500 errors", got)
	}
	if got := tally(30*time.Second, 100); got["ok"] != 100 {
		t.Errorf("after: %v, want 100 ok", got)
	}
}

func TestTransport(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	t.Run("status with Retry-After", func(t *testing.T) {
		hits.Store(0)
		inj := mustNew(t, chaos.Config{Faults: chaos.Faults{StatusRate: 1, Status: 429, RetryAfter: 1500 * time.Millisecond}})
		body := &closeRecorder{Reader: strings.NewReader("payload")}
		req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
		resp, err := inj.Transport(tr).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || resp.Request != req {
			t.Errorf("got %d, Retry-After %q; want 429, \"2\", and the request", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if hits.Load() != 0 || !body.closed {
			t.Errorf("server hits %d, body closed %v; want 0 and true", hits.Load(), body.closed)
		}
	})
	t.Run("reset", func(t *testing.T) {
		hits.Store(0)
		inj := mustNew(t, chaos.Config{Faults: chaos.Faults{ResetRate: 1}})
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := inj.Transport(tr).RoundTrip(req)
		if resp != nil || !errors.Is(err, syscall.ECONNRESET) || !errors.Is(err, chaos.ErrInjected) {
			t.Errorf("got %v, %v; want a reset matching ErrInjected", resp, err)
		}
		if hits.Load() != 0 {
			t.Errorf("server hit %d times, want 0", hits.Load())
		}
	})
	t.Run("no fault goes through", func(t *testing.T) {
		hits.Store(0)
		inj := mustNew(t, chaos.Config{})
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := inj.Transport(tr).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" || hits.Load() != 1 {
			t.Errorf("got %q after %d hits, want ok after 1", b, hits.Load())
		}
	})
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// The added latency is waited within the caller's context, in virtual
// time under synctest.
func TestLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inj := mustNew(t, chaos.Config{Faults: chaos.Faults{Latency: chaos.Fixed(time.Hour)}})
		fn := chaos.Wrap(inj, func(context.Context) (int, error) { return 1, nil })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if _, err := fn(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("got %v after %v, want the deadline after 1s", err, time.Since(start))
		}
		inj = mustNew(t, chaos.Config{Faults: chaos.Faults{Latency: chaos.Uniform(10*time.Millisecond, 20*time.Millisecond)}})
		fn = chaos.Wrap(inj, func(context.Context) (int, error) { return 1, nil })
		for range 100 {
			start := time.Now()
			if _, err := fn(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < 10*time.Millisecond || d > 20*time.Millisecond {
				t.Fatalf("call took %v, want within [10ms, 20ms]", d)
			}
		}
	})
}

func TestLatencyShapes(t *testing.T) {
	tests := []struct {
		name   string
		l      chaos.Latency
		lo, hi time.Duration // bounds on the mean of 10000 draws
	}{
		{"fixed", chaos.Fixed(5 * time.Millisecond), 5 * time.Millisecond, 5 * time.Millisecond},
		{"uniform", chaos.Uniform(0, 10*time.Millisecond), 4800 * time.Microsecond, 5200 * time.Microsecond},
		{"exponential", chaos.Exponential(10 * time.Millisecond), 9500 * time.Microsecond, 10500 * time.Microsecond},
		// Mean of a lognormal: median * e^(sigma^2/2) = 11.33 ms.
		{"lognormal", chaos.LogNormal(10*time.Millisecond, 0.5), 11 * time.Millisecond, 11700 * time.Microsecond},
		{"spike", chaos.Spike(0.01, time.Second), 8 * time.Millisecond, 12 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var sum time.Duration
			for range 10000 {
				sum += tc.l(r)
			}
			if mean := sum / 10000; mean < tc.lo || mean > tc.hi {
				t.Errorf("mean %v, want in [%v, %v]", mean, tc.lo, tc.hi)
			}
		})
	}
}

// Injected statuses from Wrap are marked for retry: a 503 is Throttled,
// a Retry-After a server-directed delay.
func TestWrapWithRetry(t *testing.T) {
	inj := mustNew(t, chaos.Config{Faults: chaos.Faults{StatusRate: 1, RetryAfter: 2 * time.Second}})
	fn := chaos.Wrap(inj, func(context.Context) (int, error) { return 1, nil })
	_, err := fn(context.Background())
	if got := engine.DefaultClassify(err); got != failure.Throttled {
		t.Errorf("503 classified %v, want Throttled", got)
	}
	var sd interface{ RetryAfter() time.Duration }
	if !errors.As(err, &sd) {
		t.Fatalf("%v carries no server delay", err)
	}
	if d := sd.RetryAfter(); d != 2*time.Second {
		t.Errorf("server delay %v, want 2s", d)
	}
}
