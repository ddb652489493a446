// Package unherdmesh converts retry settings written for a service mesh
// or a gateway into unherd's, so that a service calling a dependency
// directly, or moving off a sidecar, keeps the retries its proxy made:
//
//	cfg, err := unherdmesh.ParseEnvoyRetryPolicy(retryPolicyYAML, nil)
//	if err != nil {
//		return err // names the field unherd cannot express
//	}
//	tr, err := unherdhttp.NewTransport(nil, cfg)
//	client := &http.Client{Transport: tr}
//
// Four dialects convert, each from the YAML or JSON its source documents:
//
//   - Envoy: a route's retry_policy (ParseEnvoyRetryPolicy) and the
//     retry limit of a cluster's circuit_breakers, its retry_budget or
//     max_retries (ParseEnvoyCircuitBreakers, a budget.Concurrency);
//   - Linkerd: a ServiceProfile's routes and retryBudget
//     (ParseServiceProfile, a budget.Ratio shared by the routes, and a
//     RoundTripper that sends each request by its route's policy), and the
//     retry.linkerd.io annotations of Linkerd 2.16 and later
//     (ParseLinkerdAnnotations);
//   - the Gateway API: an HTTPRoute rule's retry stanza, GEP-1731
//     (ParseHTTPRouteRule), and a BackendTrafficPolicy's
//     retryConstraint, GEP-3388 (ParseBackendTrafficPolicy, a
//     budget.Ratio).
//
// A budget belongs to the dependency, not to one route: convert it once
// and pass it to the converter of every route that sends to the
// dependency, as the proxy shares it.
//
// # What converts, and what does not
//
// A converter refuses what unherd cannot express (Envoy's
// retry_host_predicate, a Gateway API request timeout, a gRPC condition),
// with an error that wraps ErrConfig and names the field, rather than
// dropping it and retrying differently from the proxy without a word.
// What it converts keeps unherd's rules where a proxy's would be unsafe
// for a client: a POST without an Idempotency-Key is repeated only when
// it never left, delays are drawn with full jitter, and a server's
// Retry-After is honoured as a floor. CONFORMANCE.md lists, dialect by
// dialect, the published examples each converter is tested against, the
// request traces run through both the converted policy and the source's
// documented rule, and every departure.
//
// The converters live in a module of their own because YAML needs a
// parser (sigs.k8s.io/yaml) that unherd's core packages, which import the
// standard library only, do without.
package unherdmesh
