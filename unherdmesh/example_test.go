package unherdmesh_test

import (
	"fmt"
	"net/http"

	"github.com/unherd/unherd/unherdhttp"
	"github.com/unherd/unherd/unherdmesh"
)

// An Envoy route's retry policy and its cluster's retry budget, converted
// for a client that calls the dependency directly.
func ExampleParseEnvoyRetryPolicy() {
	cluster, err := unherdmesh.ParseEnvoyCircuitBreakers([]byte(`
thresholds:
- priority: DEFAULT
  retry_budget:
    budget_percent: {value: 20.0}
    min_retry_concurrency: 3
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := unherdmesh.ParseEnvoyRetryPolicy([]byte(`
retry_on: gateway-error,connect-failure
num_retries: 2
per_try_timeout: 0.5s
retry_back_off: {base_interval: 0.1s}
`), cluster)
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := unherdhttp.NewTransport(nil, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = &http.Client{Transport: tr}
	fmt.Println("attempts:", cfg.Retry.MaxAttempts)
	fmt.Println("per attempt:", cfg.Retry.AttemptTimeout)
	fmt.Println("backoff:", cfg.Retry.Backoff.Base, "capped at", cfg.Retry.Backoff.Cap)
	c, _ := cfg.Classify(&http.Response{StatusCode: 500}, nil)
	fmt.Println("a 500 is", c)

	_, err = unherdmesh.ParseEnvoyRetryPolicy([]byte(`
retry_on: 5xx
retry_host_predicate:
- name: envoy.retry_host_predicates.previous_hosts
`), cluster)
	fmt.Println(err)
	// Output:
	// attempts: 3
	// per attempt: 500ms
	// backoff: 100ms capped at 1s
	// a 500 is permanent
	// unherdmesh: retry settings do not convert: retry_policy.retry_host_predicate is not supported: unherd does not choose hosts; pick the next host in your resolver or balancer
}

// A Gateway API route rule's retry stanza, sharing its backend's retry
// budget (GEP-3388) with the other rules that send to it.
func ExampleParseHTTPRouteRule() {
	backend, err := unherdmesh.ParseBackendTrafficPolicy([]byte(`
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackendTrafficPolicy
spec:
  retryConstraint:
    budget: {percent: 20, interval: 10s}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := unherdmesh.ParseHTTPRouteRule([]byte(`
retry:
  codes: [502, 503]
  attempts: 3
  backoff: 200ms
timeouts:
  backendRequest: 2s
`), backend)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Retry.MaxAttempts, cfg.Retry.Backoff.Base, cfg.Retry.AttemptTimeout)
	// Output: 4 200ms 2s
}

// A Linkerd ServiceProfile: its routes share the profile's retry budget,
// and its Transport sends each request by its route's policy.
func ExampleParseServiceProfile() {
	sp, err := unherdmesh.ParseServiceProfile([]byte(`
apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata:
  name: books.default.svc.cluster.local
spec:
  routes:
  - name: GET /books/{id}
    condition:
      method: GET
      pathRegex: /books/\d+
    isRetryable: true
    timeout: 300ms
  - name: POST /books
    condition:
      method: POST
      pathRegex: /books
  retryBudget:
    retryRatio: 0.2
    minRetriesPerSecond: 10
    ttl: 10s
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, rt := range sp.Routes() {
		fmt.Printf("%s: %d attempts, timeout %v\n", rt.Name, rt.Config.Retry.MaxAttempts, rt.Timeout)
	}
	tr, err := sp.Transport(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = &http.Client{Transport: tr}
	// Output:
	// GET /books/{id}: 3 attempts, timeout 300ms
	// POST /books: 1 attempts, timeout 0s
}

// Linkerd's retry annotations on an HTTPRoute or a Service.
func ExampleParseLinkerdAnnotations() {
	cfg, err := unherdmesh.ParseLinkerdAnnotations(map[string]string{
		"retry.linkerd.io/http":    "5xx,429",
		"retry.linkerd.io/limit":   "2",
		"retry.linkerd.io/timeout": "300ms",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Retry.MaxAttempts, cfg.Retry.AttemptTimeout)
	_, err = unherdmesh.ParseLinkerdAnnotations(map[string]string{"timeout.linkerd.io/request": "1s"})
	fmt.Println(err != nil)
	// Output:
	// 3 300ms
	// true
}
