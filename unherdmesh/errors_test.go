package unherdmesh

import (
	"errors"
	"strings"
	"testing"
)

var errTest = errors.New("test: connection reset")

// Each converter refuses what it cannot express with an error that wraps
// ErrConfig and names the field.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		err         error
	}{
		{"EnvoyHostPredicate", "retry_host_predicate", envoyErr("retry_on: 5xx\nretry_host_predicate:\n- name: envoy.retry_host_predicates.previous_hosts\n")},
		{"EnvoyRetryPriority", "retry_priority", envoyErr("retry_on: 5xx\nretry_priority: {name: envoy.retry_priorities.previous_priorities}\n")},
		{"EnvoyHedgePolicy", "hedge_policy", envoyErr("retry_on: 5xx\nhedge_policy: {hedge_on_per_try_timeout: true}\n")},
		{"EnvoyIdleTimeout", "per_try_idle_timeout", envoyErr("per_try_idle_timeout: 1s\n")},
		{"EnvoyRequestHeaders", "retriable_request_headers", envoyErr("retriable_request_headers: [{name: x}]\n")},
		{"EnvoyGRPCCondition", "unavailable", envoyErr("retry_on: 5xx,unavailable\n")},
		{"EnvoyUnknownCondition", "5xxx", envoyErr("retry_on: 5xxx\n")},
		{"EnvoyCodesWithoutCondition", "retriable_status_codes", envoyErr("retry_on: 5xx\nretriable_status_codes: [409]\n")},
		{"EnvoyUnknownField", "retry_ob", envoyErr("retry_ob: 5xx\n")},
		{"EnvoyMaxBelowBase", "max_interval", envoyErr("retry_back_off: {base_interval: 1s, max_interval: 0.5s}\n")},
		{"EnvoyBadDuration", "per_try_timeout", envoyErr("per_try_timeout: 100ms\n")},
		{"EnvoyPerHost", "per_host_thresholds", cbErr("per_host_thresholds: [{max_connections: 1}]\n")},
		{"EnvoyBudgetPercent", "budget_percent", cbErr("thresholds: [{retry_budget: {budget_percent: {value: 0}}}]\n")},
		{"LinkerdDstOverrides", "dstOverrides", profileErr("spec: {dstOverrides: [{authority: a, weight: 1}]}\n")},
		{"LinkerdBadRegex", "pathRegex", profileErr("spec: {routes: [{name: r, condition: {pathRegex: '('}}]}\n")},
		{"LinkerdEmptyCondition", "routes[0]", profileErr("spec: {routes: [{name: r, condition: {}}]}\n")},
		{"LinkerdZeroRatio", "retryRatio", profileErr("spec: {retryBudget: {retryRatio: 0}}\n")},
		{"LinkerdRequestTimeout", "timeout.linkerd.io/request", annotationsErr(map[string]string{"timeout.linkerd.io/request": "1s"})},
		{"LinkerdBadCodes", "retry.linkerd.io/http", annotationsErr(map[string]string{"retry.linkerd.io/http": "504-500"})},
		{"LinkerdUnknown", "retry.linkerd.io/backoff", annotationsErr(map[string]string{"retry.linkerd.io/backoff": "1s"})},
		{"GatewayRequestTimeout", "timeouts.request", ruleErr("timeouts: {request: 10s}\nretry: {attempts: 1}\n")},
		{"GatewayCode", "retry.codes[0]", ruleErr("retry: {codes: [200]}\n")},
		{"GatewayBackoff", "retry.backoff", ruleErr("retry: {backoff: 0.1s}\n")},
		{"GatewayInterval", "budget.interval", btpErr("spec: {retryConstraint: {budget: {interval: 2h}}}\n")},
		{"GatewaySessionPersistence", "sessionPersistence", btpErr("spec: {sessionPersistence: {sessionName: a}}\n")},
		{"GatewayEnvoyGateway", "gateway.envoyproxy.io", btpErr("apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: BackendTrafficPolicy\nspec: {retry: {numRetries: 3}}\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, ErrConfig) || !strings.Contains(tc.err.Error(), tc.field) {
				t.Fatalf("err = %v, want ErrConfig naming %s", tc.err, tc.field)
			}
		})
	}
}

// The error of each converter, for the table above.
func envoyErr(y string) error   { return errOf(ParseEnvoyRetryPolicy([]byte(y), nil)) }
func cbErr(y string) error      { return errOf(ParseEnvoyCircuitBreakers([]byte(y))) }
func profileErr(y string) error { return errOf(ParseServiceProfile([]byte(y))) }
func ruleErr(y string) error    { return errOf(ParseHTTPRouteRule([]byte(y), nil)) }
func btpErr(y string) error     { return errOf(ParseBackendTrafficPolicy([]byte(y))) }

func annotationsErr(a map[string]string) error { return errOf(ParseLinkerdAnnotations(a)) }

// errOf returns err, dropping the converted value.
func errOf[T any](_ T, err error) error { return err }
