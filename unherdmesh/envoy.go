package unherdmesh

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/unherdhttp"
)

// Envoy's documented defaults (route_components.proto, RetryPolicy and
// RetryBackOff; circuit_breaker.proto, Thresholds).
const (
	envoyDefaultRetries    = 1                     // num_retries
	envoyDefaultBase       = 25 * time.Millisecond // retry_back_off.base_interval
	envoyMaxIntervalFactor = 10                    // max_interval defaults to 10 x base_interval
	envoyRateLimitedMax    = 300 * time.Second     // rate_limited_retry_back_off.max_interval
	envoyDefaultMaxRetries = 3                     // circuit breaker max_retries
	envoyRateLimitJitter   = 0.5                   // reset header delay drawn in [d, 1.5d]
	envoyMinBase           = time.Millisecond      // base_interval is rounded up to 1 ms
	envoyRateLimitedHeader = "x-envoy-ratelimited" // set by an Envoy that rate limited the request
)

// envoyRetryPolicy is Envoy's route RetryPolicy
// (envoy.config.route.v3.RetryPolicy) in its YAML/JSON form. Fields
// unherd cannot express are read so that they can be refused by name.
type envoyRetryPolicy struct {
	RetryOn                       *string                  `json:"retry_on"`
	NumRetries                    *uint32                  `json:"num_retries"`
	PerTryTimeout                 *string                  `json:"per_try_timeout"`
	PerTryIdleTimeout             json.RawMessage          `json:"per_try_idle_timeout"`
	RetryPriority                 json.RawMessage          `json:"retry_priority"`
	RetryHostPredicate            json.RawMessage          `json:"retry_host_predicate"`
	RetryOptionsPredicates        json.RawMessage          `json:"retry_options_predicates"`
	HostSelectionRetryMaxAttempts json.RawMessage          `json:"host_selection_retry_max_attempts"`
	RetriableStatusCodes          []uint32                 `json:"retriable_status_codes"`
	RetryBackOff                  *envoyBackOff            `json:"retry_back_off"`
	RateLimitedRetryBackOff       *envoyRateLimitedBackOff `json:"rate_limited_retry_back_off"`
	RetriableHeaders              json.RawMessage          `json:"retriable_headers"`
	RetriableRequestHeaders       json.RawMessage          `json:"retriable_request_headers"`
	HedgePolicy                   json.RawMessage          `json:"hedge_policy"`
}

type envoyBackOff struct {
	BaseInterval *string `json:"base_interval"`
	MaxInterval  *string `json:"max_interval"`
}

type envoyRateLimitedBackOff struct {
	ResetHeaders []struct {
		Name   string `json:"name"`
		Format string `json:"format"`
	} `json:"reset_headers"`
	MaxInterval *string `json:"max_interval"`
}

// ParseEnvoyRetryPolicy converts an Envoy route's retry_policy
// (envoy.config.route.v3.RetryPolicy, the object under a route's or a
// virtual host's "retry_policy", in YAML or JSON with Envoy's snake_case
// field names) to an unherdhttp.Config, so that a service that calls a
// dependency directly keeps the retry settings its Envoy sidecar had.
// cluster is the retry budget of the upstream cluster, shared by every
// route to it: the *budget.Concurrency of ParseEnvoyCircuitBreakers. Nil
// means a budget of the route's own with Envoy's default circuit breaker
// (at most 3 retries in flight).
//
// The fields become:
//
//   - retry_on, a comma-separated list of conditions, and
//     retriable_status_codes are Config.Classify: a response or a
//     transport error that a condition names is retried, every other
//     failure is returned at once (class Permanent). "5xx" retries every
//     5xx status, connection failures, resets and attempt timeouts;
//     "gateway-error" 502, 503 and 504 and the same errors; "reset"
//     connection failures, resets and timeouts; "connect-failure" and
//     "reset-before-request" connection failures; "retriable-4xx" 409;
//     "retriable-status-codes" the codes listed. A response carrying
//     x-envoy-ratelimited (an upstream Envoy rate limited it) is retried
//     only under "envoy-ratelimited", whatever its status. "refused-stream" and
//     "http3-post-connect-failure" are accepted and change nothing:
//     net/http retries a REFUSED_STREAM itself and does not speak HTTP/3.
//     An empty retry_on retries nothing, as in Envoy.
//   - num_retries (default 1) is Retry.MaxAttempts-1.
//   - per_try_timeout is Retry.AttemptTimeout.
//   - retry_back_off's base_interval (default 25 ms, at least 1 ms) is
//     Backoff.Base and Backoff.ThrottledBase (Envoy has no separate base
//     after throttling); max_interval (default ten times the base) is
//     Backoff.Cap. Delays are drawn with full jitter.
//   - rate_limited_retry_back_off, with reset headers that are
//     Retry-After in SECONDS format, is honoured as unherdhttp honours
//     Retry-After, with Envoy's jitter (Retry.ServerJitter 0.5, a delay
//     drawn in [d, 1.5d]); its max_interval (default 300 s) is
//     Retry.MaxServerDelay.
//
// Fields unherd does not do are refused by name: retry_host_predicate,
// retry_priority, retry_options_predicates and
// host_selection_retry_max_attempts (host selection is the resolver's
// and balancer's business), per_try_idle_timeout, retriable_headers,
// retriable_request_headers and the "retriable-headers" condition
// (write Config.Classify), reset headers other than Retry-After in
// SECONDS (X-RateLimit-Reset), gRPC conditions such as "unavailable"
// (use unherdgrpc), and hedge_policy, which belongs to the route, not to
// the retry policy (use Config.Hedge). Every error wraps ErrConfig.
// CONFORMANCE.md lists where the converted policy departs from Envoy.
func ParseEnvoyRetryPolicy(retryPolicy []byte, cluster budget.Budget) (unherdhttp.Config, error) {
	var rp envoyRetryPolicy
	if err := decode(retryPolicy, &rp, "retry_policy"); err != nil {
		return unherdhttp.Config{}, err
	}
	for _, f := range []struct {
		raw  json.RawMessage
		name string
		why  string
	}{
		{rp.RetryHostPredicate, "retry_host_predicate", "unherd does not choose hosts; pick the next host in your resolver or balancer"},
		{rp.RetryPriority, "retry_priority", "unherd does not choose hosts or priorities; leave it to your balancer"},
		{rp.RetryOptionsPredicates, "retry_options_predicates", "unherd does not choose upstream connection options per retry"},
		{rp.HostSelectionRetryMaxAttempts, "host_selection_retry_max_attempts", "unherd does not choose hosts"},
		{rp.PerTryIdleTimeout, "per_try_idle_timeout", "unherd has no idle timeout per attempt; bound the attempt with per_try_timeout"},
		{rp.RetriableHeaders, "retriable_headers", "write unherdhttp.Config.Classify to retry on response headers"},
		{rp.RetriableRequestHeaders, "retriable_request_headers", "decide per request whether to use the retrying Transport"},
		{rp.HedgePolicy, "hedge_policy", "it belongs to the route, not the retry policy; hedge with unherdhttp.Config.Hedge"},
	} {
		if isSet(f.raw) {
			return unherdhttp.Config{}, fmt.Errorf("%w: retry_policy.%s is not supported: %s", ErrConfig, f.name, f.why)
		}
	}

	var cfg unherdhttp.Config
	r, err := envoyRule(rp)
	if err != nil {
		return unherdhttp.Config{}, err
	}
	cfg.Classify = r.classify

	retries := uint32(envoyDefaultRetries)
	if rp.NumRetries != nil {
		retries = *rp.NumRetries
	}
	if retries > math.MaxInt32-1 {
		return unherdhttp.Config{}, fmt.Errorf("%w: retry_policy.num_retries %d is too large", ErrConfig, retries)
	}
	cfg.Retry.MaxAttempts = int(retries) + 1
	if rp.RetryOn == nil || strings.TrimSpace(*rp.RetryOn) == "" {
		cfg.Retry.MaxAttempts = 1 // no condition: Envoy retries nothing
	}

	if rp.PerTryTimeout != nil {
		d, err := protoDuration(*rp.PerTryTimeout, "retry_policy.per_try_timeout")
		if err != nil {
			return unherdhttp.Config{}, err
		}
		cfg.Retry.AttemptTimeout = d
	}

	base := envoyDefaultBase
	var maxb time.Duration
	if b := rp.RetryBackOff; b != nil {
		if b.BaseInterval == nil {
			return unherdhttp.Config{}, fmt.Errorf("%w: retry_policy.retry_back_off.base_interval is required", ErrConfig)
		}
		if base, err = protoDuration(*b.BaseInterval, "retry_policy.retry_back_off.base_interval"); err != nil {
			return unherdhttp.Config{}, err
		}
		base = max(base, envoyMinBase)
		if b.MaxInterval != nil {
			if maxb, err = protoDuration(*b.MaxInterval, "retry_policy.retry_back_off.max_interval"); err != nil {
				return unherdhttp.Config{}, err
			}
			if maxb < base {
				return unherdhttp.Config{}, fmt.Errorf("%w: retry_policy.retry_back_off.max_interval %s is less than base_interval %s", ErrConfig, *b.MaxInterval, *b.BaseInterval)
			}
		}
	}
	if maxb == 0 {
		maxb = base * envoyMaxIntervalFactor
		if maxb/envoyMaxIntervalFactor != base {
			maxb = math.MaxInt64
		}
	}
	cfg.Retry.Backoff = backoff.Schedule{Base: base, ThrottledBase: base, Cap: maxb}

	if rl := rp.RateLimitedRetryBackOff; rl != nil {
		if len(rl.ResetHeaders) == 0 {
			return unherdhttp.Config{}, fmt.Errorf("%w: retry_policy.rate_limited_retry_back_off.reset_headers must list at least one header", ErrConfig)
		}
		for i, h := range rl.ResetHeaders {
			format := h.Format
			if format == "" {
				format = "SECONDS" // the enum's zero value
			}
			if !strings.EqualFold(h.Name, "Retry-After") || format != "SECONDS" {
				return unherdhttp.Config{}, fmt.Errorf("%w: retry_policy.rate_limited_retry_back_off.reset_headers[%d] (%s, %s) is not supported: unherd reads the server's delay from Retry-After (seconds or an HTTP-date) only", ErrConfig, i, h.Name, format)
			}
		}
		maxd := envoyRateLimitedMax
		if rl.MaxInterval != nil {
			if maxd, err = protoDuration(*rl.MaxInterval, "retry_policy.rate_limited_retry_back_off.max_interval"); err != nil {
				return unherdhttp.Config{}, err
			}
		}
		cfg.Retry.MaxServerDelay = maxd
		cfg.Retry.ServerJitter = envoyRateLimitJitter
	}

	if cluster == nil {
		b, err := ParseEnvoyCircuitBreakers(nil)
		if err != nil {
			return unherdhttp.Config{}, err
		}
		cluster = b
	}
	cfg.Retry.Budget = cluster
	return cfg, nil
}

// envoyRule reads retry_on and retriable_status_codes.
func envoyRule(rp envoyRetryPolicy) (rule, error) {
	var (
		codes                                      statuses
		onConnect, onReset, onTimeout, rateLimited bool
		listedCodes                                bool
	)
	if rp.RetryOn != nil {
		for _, c := range strings.Split(*rp.RetryOn, ",") {
			switch c = strings.TrimSpace(c); c {
			case "":
			case "5xx":
				codes = append(codes, codeRange{500, 599})
				onConnect, onReset, onTimeout = true, true, true
			case "gateway-error":
				codes = append(codes, codeRange{502, 504})
				onConnect, onReset, onTimeout = true, true, true
			case "reset":
				onConnect, onReset, onTimeout = true, true, true
			case "connect-failure", "reset-before-request":
				onConnect = true
			case "retriable-4xx":
				codes = append(codes, codeRange{409, 409})
			case "retriable-status-codes":
				listedCodes = true
			case "envoy-ratelimited":
				rateLimited = true
			case "refused-stream", "http3-post-connect-failure":
				// net/http retries a stream refused with REFUSED_STREAM
				// itself, and does not speak HTTP/3.
			case "retriable-headers":
				return rule{}, fmt.Errorf("%w: retry_policy.retry_on %q is not supported: write unherdhttp.Config.Classify to retry on response headers", ErrConfig, c)
			case "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable":
				return rule{}, fmt.Errorf("%w: retry_policy.retry_on %q is a gRPC condition: convert gRPC retries for unherdgrpc (Config.Codes)", ErrConfig, c)
			default:
				return rule{}, fmt.Errorf("%w: retry_policy.retry_on %q is not a condition Envoy documents", ErrConfig, c)
			}
		}
	}
	switch {
	case len(rp.RetriableStatusCodes) > 0 && !listedCodes:
		return rule{}, fmt.Errorf("%w: retry_policy.retriable_status_codes is set but retry_on lacks \"retriable-status-codes\", so Envoy ignores the list: add the condition or remove the list", ErrConfig)
	case listedCodes && len(rp.RetriableStatusCodes) == 0:
		return rule{}, fmt.Errorf("%w: retry_policy.retry_on has \"retriable-status-codes\" but retriable_status_codes lists none", ErrConfig)
	}
	for i, c := range rp.RetriableStatusCodes {
		if c < 400 || c > 599 {
			return rule{}, fmt.Errorf("%w: retry_policy.retriable_status_codes[%d] %d is not a failure status (400 to 599)", ErrConfig, i, c)
		}
		codes = append(codes, codeRange{int(c), int(c)})
	}
	return rule{
		status: func(resp *http.Response) bool {
			// A response an upstream Envoy rate limited is retried only
			// under envoy-ratelimited, whatever its status, as Envoy's
			// router decides.
			if _, limited := resp.Header[http.CanonicalHeaderKey(envoyRateLimitedHeader)]; limited {
				return rateLimited
			}
			return codes.has(resp.StatusCode)
		},
		err: func(o outcome) bool {
			switch o {
			case connectFailure:
				return onConnect
			case attemptTimeout:
				return onTimeout
			}
			return onReset
		},
	}, nil
}

// envoyCircuitBreakers is a cluster's circuit_breakers
// (envoy.config.cluster.v3.CircuitBreakers).
type envoyCircuitBreakers struct {
	Thresholds []struct {
		Priority           string          `json:"priority"`
		MaxConnections     json.RawMessage `json:"max_connections"`
		MaxPendingRequests json.RawMessage `json:"max_pending_requests"`
		MaxRequests        json.RawMessage `json:"max_requests"`
		MaxRetries         *uint32         `json:"max_retries"`
		RetryBudget        *struct {
			BudgetPercent *struct {
				Value float64 `json:"value"`
			} `json:"budget_percent"`
			MinRetryConcurrency *uint32 `json:"min_retry_concurrency"`
		} `json:"retry_budget"`
		TrackRemaining bool `json:"track_remaining"`
	} `json:"thresholds"`
	PerHostThresholds json.RawMessage `json:"per_host_thresholds"`
}

// ParseEnvoyCircuitBreakers converts the retry limit of an Envoy
// cluster's circuit_breakers (envoy.config.cluster.v3.CircuitBreakers,
// YAML or JSON) to a budget.Concurrency, Envoy's own rule: the retries in
// flight to the cluster are at most a share of the requests in flight,
// or a fixed number. Share the budget among the Configs of every route
// to the cluster (ParseEnvoyRetryPolicy's cluster argument), as Envoy
// shares it.
//
// Only the DEFAULT priority's thresholds are read (Envoy's HIGH priority
// is for routes marked so, which unherd does not have). With a
// retry_budget, its budget_percent (default 20) is the Concurrency's
// Ratio and min_retry_concurrency (default 3) its MinRetries, and
// max_retries is ignored, as Envoy ignores it. Without one, max_retries
// (default 3, also for empty input) is the most retries in flight
// whatever the traffic. max_connections, max_pending_requests,
// max_requests and track_remaining limit connections and requests, not
// retries, and are not read; per_host_thresholds is. Every error wraps
// ErrConfig.
func ParseEnvoyCircuitBreakers(circuitBreakers []byte) (*budget.Concurrency, error) {
	var cb envoyCircuitBreakers
	if err := decode(circuitBreakers, &cb, "circuit_breakers"); err != nil {
		return nil, err
	}
	if isSet(cb.PerHostThresholds) {
		return nil, fmt.Errorf("%w: circuit_breakers.per_host_thresholds is not supported: unherd budgets retries per dependency, not per host", ErrConfig)
	}
	maxRetries := uint32(envoyDefaultMaxRetries)
	seen := false
	for i, t := range cb.Thresholds {
		switch t.Priority {
		case "", "DEFAULT":
		case "HIGH":
			continue
		default:
			return nil, fmt.Errorf("%w: circuit_breakers.thresholds[%d].priority %q is neither DEFAULT nor HIGH", ErrConfig, i, t.Priority)
		}
		if seen {
			return nil, fmt.Errorf("%w: circuit_breakers.thresholds[%d] repeats the DEFAULT priority", ErrConfig, i)
		}
		seen = true
		if rb := t.RetryBudget; rb != nil {
			cfg := budget.ConcurrencyConfig{Ratio: budget.DefaultConcurrencyRatio, MinRetries: budget.DefaultMinRetryConcurrency}
			if p := rb.BudgetPercent; p != nil {
				if !(p.Value > 0 && p.Value <= 100) {
					return nil, fmt.Errorf("%w: circuit_breakers.thresholds[%d].retry_budget.budget_percent %v is outside (0, 100]", ErrConfig, i, p.Value)
				}
				cfg.Ratio = p.Value / 100
			}
			if m := rb.MinRetryConcurrency; m != nil {
				cfg.MinRetries = minRetries(*m)
			}
			return newConcurrency(cfg, fmt.Sprintf("circuit_breakers.thresholds[%d].retry_budget", i))
		}
		if t.MaxRetries != nil {
			maxRetries = *t.MaxRetries
		}
	}
	// max_retries alone: a fixed number of retries in flight, whatever
	// the traffic. The smallest positive ratio gives no retry beyond the
	// floor until some 10^300 attempts are in flight.
	return newConcurrency(budget.ConcurrencyConfig{Ratio: math.SmallestNonzeroFloat64, MinRetries: minRetries(maxRetries)}, "circuit_breakers.max_retries")
}

// minRetries turns Envoy's count into ConcurrencyConfig.MinRetries, where
// zero means the default and a negative value none.
func minRetries(n uint32) int {
	if n == 0 {
		return -1
	}
	return int(min(n, math.MaxInt32))
}

func newConcurrency(cfg budget.ConcurrencyConfig, what string) (*budget.Concurrency, error) {
	c, err := budget.NewConcurrency(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, what, err)
	}
	return c, nil
}
