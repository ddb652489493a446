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

// The Gateway API's documented defaults for a BackendTrafficPolicy's
// retryConstraint (GEP-3388): 20% of the requests of the last 10 s, and
// at least 10 retries per second.
const (
	gatewayBudgetPercent = 20
	gatewayBudgetWindow  = 10 * time.Second
	gatewayMinRetries    = 10
	gatewayMinInterval   = time.Second
)

type httpRouteRule struct {
	Name               json.RawMessage `json:"name"`
	Matches            json.RawMessage `json:"matches"`
	Filters            json.RawMessage `json:"filters"`
	BackendRefs        json.RawMessage `json:"backendRefs"`
	SessionPersistence json.RawMessage `json:"sessionPersistence"`
	Timeouts           *struct {
		Request        *string `json:"request"`
		BackendRequest *string `json:"backendRequest"`
	} `json:"timeouts"`
	Retry *struct {
		Codes    []int   `json:"codes"`
		Attempts *int    `json:"attempts"`
		Backoff  *string `json:"backoff"`
	} `json:"retry"`
}

// ParseHTTPRouteRule converts the retry settings of one rule of a
// Gateway API HTTPRoute (an element of spec.rules, in YAML or JSON) to an
// unherdhttp.Config: its retry stanza (GEP-1731) and its
// timeouts.backendRequest. The rule's matches, filters and backendRefs
// route the request and are not read. b is the retry budget of the
// backend, shared by every rule that sends to it: the *budget.Ratio of
// ParseBackendTrafficPolicy; nil means unherd's default budget, a token
// bucket of the Transport's own.
//
// A rule with a retry stanza retries:
//
//   - the statuses in codes (400 to 599); a failure status not listed is
//     returned at once;
//   - a connection that could not be made and an attempt that reached
//     timeouts.backendRequest, as GEP-1731 says implementations should;
//     a connection reset after the request was sent is not retried, as
//     GEP-1731 says they should not by default;
//   - up to attempts retries after the first request (Retry.MaxAttempts
//     is attempts+1; 0 disables retries; unset is unherd's default, 2);
//   - after a delay drawn with full jitter from backoff (Backoff.Base and
//     ThrottledBase; unset is unherd's default schedule) and capped at
//     unherd's default cap, 20 s, or at backoff if it is longer.
//
// A rule without a retry stanza makes one attempt (Retry.MaxAttempts 1).
// timeouts.backendRequest is Retry.AttemptTimeout. timeouts.request
// bounds the whole request, retries included, which a Config cannot
// express: it is refused; set the request context's deadline instead and
// convert the rule without it. Values the Gateway API refuses are
// refused too. Every error wraps ErrConfig and names the field.
func ParseHTTPRouteRule(routeRule []byte, b budget.Budget) (unherdhttp.Config, error) {
	var r httpRouteRule
	if err := decode(routeRule, &r, "HTTPRoute rule"); err != nil {
		return unherdhttp.Config{}, err
	}
	var cfg unherdhttp.Config
	cfg.Retry.Budget = b
	if t := r.Timeouts; t != nil {
		if t.Request != nil {
			return unherdhttp.Config{}, fmt.Errorf("%w: timeouts.request is not supported: it bounds the whole request, retries included; set the request context's deadline and convert the rule without it", ErrConfig)
		}
		if t.BackendRequest != nil {
			d, err := gatewayDuration(*t.BackendRequest, "timeouts.backendRequest", true)
			if err != nil {
				return unherdhttp.Config{}, err
			}
			cfg.Retry.AttemptTimeout = d // "0s" is no timeout, as in the Gateway API
		}
	}
	rs := r.Retry
	if rs == nil {
		cfg.Retry.MaxAttempts = 1
		return cfg, nil
	}
	var codes statuses
	for i, c := range rs.Codes {
		if c < 400 || c > 599 {
			return unherdhttp.Config{}, fmt.Errorf("%w: retry.codes[%d] %d is outside 400 to 599", ErrConfig, i, c)
		}
		codes = append(codes, codeRange{c, c})
	}
	ru := rule{
		status: func(resp *http.Response) bool { return codes.has(resp.StatusCode) },
		err:    func(o outcome) bool { return o == connectFailure || o == attemptTimeout },
	}
	cfg.Classify = ru.classify
	if a := rs.Attempts; a != nil {
		if *a < 0 || *a > math.MaxInt32-1 {
			return unherdhttp.Config{}, fmt.Errorf("%w: retry.attempts %d is not a count of retries", ErrConfig, *a)
		}
		cfg.Retry.MaxAttempts = *a + 1
	}
	if rs.Backoff != nil {
		d, err := gatewayDuration(*rs.Backoff, "retry.backoff", false)
		if err != nil {
			return unherdhttp.Config{}, err
		}
		cfg.Retry.Backoff = backoff.Schedule{Base: d, ThrottledBase: d, Cap: max(d, backoff.DefaultCap)}
	}
	return cfg, nil
}

type backendTrafficPolicy struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   json.RawMessage `json:"metadata"`
	Status     json.RawMessage `json:"status"`
	Spec       struct {
		TargetRefs         json.RawMessage `json:"targetRefs"`
		SessionPersistence json.RawMessage `json:"sessionPersistence"`
		RetryConstraint    *struct {
			Budget *struct {
				Percent  *int    `json:"percent"`
				Interval *string `json:"interval"`
			} `json:"budget"`
			MinRetryRate *struct {
				Count    *int    `json:"count"`
				Interval *string `json:"interval"`
			} `json:"minRetryRate"`
		} `json:"retryConstraint"`
	} `json:"spec"`
}

// ParseBackendTrafficPolicy converts the retry budget of a Gateway API
// BackendTrafficPolicy (GEP-3388, gateway.networking.x-k8s.io, in YAML
// or JSON) to a budget.Ratio: spec.retryConstraint.budget.percent
// (default 20) of the requests of the last budget.interval (default 10s,
// between 1s and 1h) may be retries, plus minRetryRate.count retries
// (default 10; 0 for none) per minRetryRate.interval (default 1s). Share
// it among the Configs of every route rule that sends to the backend
// (ParseHTTPRouteRule's b), as the policy applies to the backend, not
// to one route.
//
// spec.targetRefs says which backends the policy applies to, and is not
// read. spec.sessionPersistence is refused (it is no retry setting; convert
// the policy without it), and so is Envoy Gateway's resource of the same
// name (gateway.envoyproxy.io), whose fields differ. A percent of 0
// (no retries beyond the minimum rate) cannot be expressed by a Ratio
// and is refused. Every error wraps ErrConfig and names the field.
func ParseBackendTrafficPolicy(policy []byte) (*budget.Ratio, error) {
	js, err := toJSON(policy, "BackendTrafficPolicy")
	if err != nil {
		return nil, err
	}
	var p backendTrafficPolicy
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if json.Unmarshal(js, &head) == nil && strings.HasPrefix(head.APIVersion, "gateway.envoyproxy.io/") {
		return nil, fmt.Errorf("%w: apiVersion %s is Envoy Gateway's BackendTrafficPolicy, not the Gateway API's (GEP-3388); convert its retry settings as Envoy's", ErrConfig, head.APIVersion)
	}
	if err := strict(js, &p, "BackendTrafficPolicy"); err != nil {
		return nil, err
	}
	if p.Kind != "" && p.Kind != "BackendTrafficPolicy" && p.Kind != "XBackendTrafficPolicy" {
		return nil, fmt.Errorf("%w: kind %s is not a BackendTrafficPolicy", ErrConfig, p.Kind)
	}
	if isSet(p.Spec.SessionPersistence) {
		return nil, fmt.Errorf("%w: spec.sessionPersistence is not supported: it is no retry setting; convert the policy without it", ErrConfig)
	}
	percent, window := gatewayBudgetPercent, gatewayBudgetWindow
	count, per := gatewayMinRetries, gatewayMinInterval
	if rc := p.Spec.RetryConstraint; rc != nil {
		if bd := rc.Budget; bd != nil {
			if bd.Percent != nil {
				percent = *bd.Percent
				if percent < 0 || percent > 100 {
					return nil, fmt.Errorf("%w: spec.retryConstraint.budget.percent %d is outside 0 to 100", ErrConfig, percent)
				}
				if percent == 0 {
					return nil, fmt.Errorf("%w: spec.retryConstraint.budget.percent 0 is not supported: a budget.Ratio needs a positive share", ErrConfig)
				}
			}
			if bd.Interval != nil {
				if window, err = gatewayDuration(*bd.Interval, "spec.retryConstraint.budget.interval", false); err != nil {
					return nil, err
				}
				if window < time.Second || window > time.Hour {
					return nil, fmt.Errorf("%w: spec.retryConstraint.budget.interval %s is outside 1s to 1h", ErrConfig, *bd.Interval)
				}
			}
		}
		if mr := rc.MinRetryRate; mr != nil {
			if mr.Count != nil {
				if count = *mr.Count; count < 0 {
					return nil, fmt.Errorf("%w: spec.retryConstraint.minRetryRate.count %d is negative", ErrConfig, count)
				}
			}
			if mr.Interval != nil {
				if per, err = gatewayDuration(*mr.Interval, "spec.retryConstraint.minRetryRate.interval", false); err != nil {
					return nil, err
				}
			}
		}
	}
	rc := budget.RatioConfig{Ratio: float64(percent) / 100, Window: window}
	if count == 0 {
		rc.NoFloor = true
	} else {
		rc.MinPerSecond = float64(count) / per.Seconds()
	}
	r, err := budget.NewRatio(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.retryConstraint: %w", ErrConfig, err)
	}
	return r, nil
}
