package unherdmesh

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
)

// Each published example is reproduced in testdata with its source in a
// comment, and converted as published.

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// concurrencyAllowed returns how many retries c allows with attempts
// attempts in flight (it leaves them counted).
func concurrencyAllowed(c *budget.Concurrency, attempts int) int {
	for range attempts {
		c.Start(budget.Attempt{N: 1})
	}
	return withdrawals(c)
}

// ratioAllowed returns how many retries r allows after requests first
// attempts.
func ratioAllowed(r *budget.Ratio, requests int) int {
	for range requests {
		r.Record(budget.Attempt{N: 1})
	}
	return withdrawals(r)
}

// withdrawals withdraws retries from b until it refuses one (or a
// million have passed) and returns how many it allowed.
func withdrawals(b budget.Budget) int {
	n := 0
	for b.Withdraw(failure.Transient) && n < 1<<20 {
		n++
	}
	return n
}

func TestEnvoyPublishedExamples(t *testing.T) {
	t.Run("EnvoyMobileRetryPolicy", func(t *testing.T) {
		// retry_back_off alone: no retry_on, so no retries, as in Envoy.
		cfg, err := ParseEnvoyRetryPolicy(readExample(t, "envoy/mobile-retry-policy.yaml"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Retry.MaxAttempts != 1 {
			t.Errorf("MaxAttempts = %d, want 1 (retry_on is empty)", cfg.Retry.MaxAttempts)
		}
		want := backoff.Schedule{Base: 250 * time.Millisecond, ThrottledBase: 250 * time.Millisecond, Cap: 60 * time.Second}
		if diff := cmp.Diff(want, cfg.Retry.Backoff); diff != "" {
			t.Errorf("Backoff (-want +got):\n%s", diff)
		}
		c, ok := cfg.Retry.Budget.(*budget.Concurrency)
		if !ok {
			t.Fatalf("Budget is %T, want *budget.Concurrency", cfg.Retry.Budget)
		}
		// Envoy's default circuit breaker: 3 retries in flight, whatever
		// the traffic.
		if got := concurrencyAllowed(c, 1000); got != 3 {
			t.Errorf("retries allowed with 1000 attempts in flight = %d, want 3 (max_retries default)", got)
		}
	})
	t.Run("EnvoyMobileCircuitBreakers", func(t *testing.T) {
		src := readExample(t, "envoy/mobile-circuit-breakers.yaml")
		for _, tc := range []struct{ attempts, want int }{
			{0, 1024},    // min_retry_concurrency
			{2000, 2000}, // budget_percent 100
		} {
			c, err := ParseEnvoyCircuitBreakers(src)
			if err != nil {
				t.Fatal(err)
			}
			if got := concurrencyAllowed(c, tc.attempts); got != tc.want {
				t.Errorf("retries allowed with %d attempts in flight = %d, want %d", tc.attempts, got, tc.want)
			}
		}
	})
	t.Run("EnvoyRateLimitedRetryBackOff", func(t *testing.T) {
		// The documented example reads X-RateLimit-Reset as a Unix
		// timestamp, which unherd cannot: refused, naming the header.
		_, err := ParseEnvoyRetryPolicy(readExample(t, "envoy/rate-limited-retry-back-off.yaml"), nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "reset_headers[1]") || !strings.Contains(err.Error(), "X-RateLimit-Reset") {
			t.Fatalf("err = %v, want ErrConfig naming reset_headers[1] X-RateLimit-Reset", err)
		}
		// Its first header alone converts.
		cfg, err := ParseEnvoyRetryPolicy([]byte("retry_on: 5xx\nrate_limited_retry_back_off:\n  reset_headers:\n  - name: Retry-After\n    format: SECONDS\n  max_interval: \"300s\"\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Retry.MaxServerDelay != 300*time.Second || cfg.Retry.ServerJitter != 0.5 {
			t.Errorf("MaxServerDelay, ServerJitter = %v, %v; want 5m0s, 0.5", cfg.Retry.MaxServerDelay, cfg.Retry.ServerJitter)
		}
	})
}

func TestLinkerdPublishedExamples(t *testing.T) {
	t.Run("ConfiguringRetriesRoute", func(t *testing.T) {
		sp, err := ParseServiceProfile(readExample(t, "linkerd/configuring-retries-route.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://books/api/annotations", nil)
		rt, ok := sp.Route(req)
		if !ok || rt.Name != "GET /api/annotations" {
			t.Fatalf("Route(GET /api/annotations) = %q, %v", rt.Name, ok)
		}
		if rt.Config.Retry.MaxAttempts != profileAttempts || rt.Config.Retry.Budget != sp.Budget() {
			t.Errorf("retryable route: MaxAttempts %d, budget shared %v", rt.Config.Retry.MaxAttempts, rt.Config.Retry.Budget == sp.Budget())
		}
		for _, u := range []string{"http://books/api/annotations/1", "http://books/x/api/annotations"} {
			req, _ := http.NewRequest(http.MethodGet, u, nil)
			if _, ok := sp.Route(req); ok {
				t.Errorf("Route(%s) matched: pathRegex must match the whole path", u)
			}
		}
		post, _ := http.NewRequest(http.MethodPost, "http://books/api/annotations", nil)
		if _, ok := sp.Route(post); ok {
			t.Error("Route(POST) matched a GET route")
		}
		// Linkerd's default budget: a floor of 10 per second over 10 s.
		if got := ratioAllowed(sp.Budget(), 0); got != 100 {
			t.Errorf("retries allowed without traffic = %d, want 100", got)
		}
	})
	t.Run("ConfiguringRetriesBudget", func(t *testing.T) {
		sp, err := ParseServiceProfile(readExample(t, "linkerd/configuring-retries-budget.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := ratioAllowed(sp.Budget(), 1000); got != 300 {
			t.Errorf("retries allowed after 1000 requests = %d, want 300 (20%% plus 10/s over 10 s)", got)
		}
	})
	t.Run("RequestMatchCombined", func(t *testing.T) {
		js, err := yaml.YAMLToJSON(readExample(t, "linkerd/request-match-combined.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var m requestMatch
		if err := strict(js, &m, "condition"); err != nil {
			t.Fatal(err)
		}
		match, err := m.compile("condition")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			method, path string
			want         bool
		}{
			{"POST", "/authors/12", true},
			{"GET", "/authors/12", false},
			{"GET", "/info.txt", true},
			{"DELETE", "/info.txt", false},
			{"POST", "/authors/x", false},
		} {
			req, _ := http.NewRequest(tc.method, "http://books"+tc.path, nil)
			if got := match(req); got != tc.want {
				t.Errorf("%s %s matched %v, want %v", tc.method, tc.path, got, tc.want)
			}
		}
	})
	t.Run("RetriesHTTPRoute", func(t *testing.T) {
		cfg, err := ParseLinkerdAnnotations(annotationsOf(t, "linkerd/retries-httproute.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Retry.MaxAttempts != 3 || cfg.Retry.AttemptTimeout != 300*time.Millisecond {
			t.Errorf("MaxAttempts, AttemptTimeout = %d, %v; want 3, 300ms", cfg.Retry.MaxAttempts, cfg.Retry.AttemptTimeout)
		}
		for code, want := range map[int]failure.Class{503: failure.Throttled, 500: failure.Transient, 404: failure.Permanent} {
			if c, ok := cfg.Classify(&http.Response{StatusCode: code, Header: http.Header{}}, nil); !ok || c != want {
				t.Errorf("Classify(%d) = %v, %v; want %v", code, c, ok, want)
			}
		}
	})
	t.Run("RetriesGRPCRoute", func(t *testing.T) {
		_, err := ParseLinkerdAnnotations(annotationsOf(t, "linkerd/retries-grpcroute.yaml"))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "retry.linkerd.io/grpc") {
			t.Fatalf("err = %v, want ErrConfig naming retry.linkerd.io/grpc", err)
		}
	})
}

func annotationsOf(t *testing.T, name string) map[string]string {
	t.Helper()
	var obj struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(readExample(t, name), &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Metadata.Annotations
}

// firstRule returns spec.rules[0] of an HTTPRoute, as YAML.
func firstRule(t *testing.T, name string) []byte {
	t.Helper()
	var obj struct {
		Spec struct {
			Rules []any `json:"rules"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(readExample(t, name), &obj); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(obj.Spec.Rules[0])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGatewayPublishedExamples(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		codes      []int
		backoff    backoff.Schedule
	}{
		{"GEP1731HTTPRetries", "gateway/http-retries.yaml", []int{500, 502, 503, 504},
			backoff.Schedule{Base: 100 * time.Millisecond, ThrottledBase: 100 * time.Millisecond, Cap: backoff.DefaultCap}},
		{"UserGuideHTTPRetries", "gateway/guide-http-retries.yaml", []int{500, 503, 504}, backoff.Schedule{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseHTTPRouteRule(firstRule(t, tc.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Retry.MaxAttempts != 3 {
				t.Errorf("MaxAttempts = %d, want 3 (attempts: 2 retries)", cfg.Retry.MaxAttempts)
			}
			if diff := cmp.Diff(tc.backoff, cfg.Retry.Backoff); diff != "" {
				t.Errorf("Backoff (-want +got):\n%s", diff)
			}
			var retried []int
			for code := 400; code <= 599; code++ {
				if c, ok := cfg.Classify(&http.Response{StatusCode: code, Header: http.Header{}}, nil); ok && c != failure.Permanent {
					retried = append(retried, code)
				}
			}
			if diff := cmp.Diff(tc.codes, retried); diff != "" {
				t.Errorf("statuses retried (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("V1.3RetryBudget", func(t *testing.T) {
		for _, tc := range []struct{ requests, want int }{
			{0, 30},     // minRetryRate: 3 per 1s, over the 10s interval
			{1000, 230}, // plus 20% of the requests
		} {
			r, err := ParseBackendTrafficPolicy(readExample(t, "gateway/v1.3-retry-budget.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if got := ratioAllowed(r, tc.requests); got != tc.want {
				t.Errorf("retries allowed after %d requests = %d, want %d", tc.requests, got, tc.want)
			}
		}
	})
}

// An upstream Envoy's rate-limited answer is retried only under
// envoy-ratelimited, whatever its status (Envoy's router,
// RetryStateImpl::wouldRetryFromHeaders).
func TestEnvoyRateLimitedHeader(t *testing.T) {
	limited := &http.Response{StatusCode: 503, Header: http.Header{"X-Envoy-Ratelimited": {"true"}}}
	for _, tc := range []struct {
		retryOn string
		want    failure.Class
	}{
		{"5xx", failure.Permanent},
		{"5xx,envoy-ratelimited", failure.Throttled},
	} {
		cfg, err := ParseEnvoyRetryPolicy([]byte("retry_on: "+tc.retryOn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := cfg.Classify(limited, nil); !ok || c != tc.want {
			t.Errorf("retry_on %s: rate-limited 503 is %v, want %v", tc.retryOn, c, tc.want)
		}
	}
}
