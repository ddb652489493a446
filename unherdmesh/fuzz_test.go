package unherdmesh

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// Every parser takes outside input: none may panic, and a Config it
// returns must classify any response and any error without panicking.

func seedDir(f *testing.F, dir string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

var probes = []*http.Response{
	{StatusCode: 200, Header: http.Header{}},
	{StatusCode: 409, Header: http.Header{}},
	{StatusCode: 429, Header: http.Header{"X-Envoy-Ratelimited": {"true"}}},
	{StatusCode: 503, Header: http.Header{}},
	{StatusCode: 599, Header: http.Header{}},
}

func FuzzParseEnvoyRetryPolicy(f *testing.F) {
	seedDir(f, "envoy")
	f.Add([]byte("retry_on: 5xx,reset,connect-failure\nnum_retries: 3\nper_try_timeout: 0.1s\nretry_back_off: {base_interval: 0.01s, max_interval: 1s}\n"))
	f.Add([]byte("retry_on: retriable-status-codes\nretriable_status_codes: [503]\n"))
	f.Add([]byte(`{"retry_on": "gateway-error", "num_retries": 4294967295}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseEnvoyRetryPolicy(b, nil)
		if err == nil {
			for _, r := range probes {
				cfg.Classify(r, nil)
			}
			cfg.Classify(nil, errTest)
			if err := cfg.Retry.Backoff.Validate(); err != nil {
				t.Fatalf("converted schedule is invalid: %v", err)
			}
		}
		ParseEnvoyCircuitBreakers(b)
	})
}

func FuzzParseServiceProfile(f *testing.F) {
	seedDir(f, "linkerd")
	f.Add([]byte("spec:\n  routes:\n  - name: r\n    condition: {not: {method: GET}}\n    isRetryable: true\n    responseClasses: [{condition: {status: {max: 502}}, isFailure: true}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, err := ParseServiceProfile(b)
		if err != nil {
			return
		}
		req, _ := http.NewRequest(http.MethodGet, "http://x/a/b", nil)
		if rt, ok := sp.Route(req); ok && rt.Config.Classify != nil {
			for _, r := range probes {
				rt.Config.Classify(r, nil)
			}
		}
	})
}

func FuzzParseLinkerdAnnotations(f *testing.F) {
	seedDir(f, "linkerd")
	f.Add([]byte("metadata: {annotations: {retry.linkerd.io/http: \"500-504,gateway-error,429\", retry.linkerd.io/limit: \"4\"}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var obj struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(b, &obj) != nil {
			return
		}
		cfg, err := ParseLinkerdAnnotations(obj.Metadata.Annotations)
		if err == nil {
			for _, r := range probes {
				cfg.Classify(r, nil)
			}
		}
	})
}

func FuzzParseHTTPRouteRule(f *testing.F) {
	f.Add([]byte("retry: {codes: [500, 502, 503, 504], attempts: 2, backoff: 100ms}\n"))
	f.Add([]byte("retry: {attempts: 0}\ntimeouts: {backendRequest: 1m30s}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseHTTPRouteRule(b, nil)
		if err == nil && cfg.Classify != nil {
			for _, r := range probes {
				cfg.Classify(r, nil)
			}
			cfg.Classify(nil, errTest)
		}
	})
}

func FuzzParseBackendTrafficPolicy(f *testing.F) {
	seedDir(f, "gateway")
	f.Add([]byte("spec: {retryConstraint: {minRetryRate: {count: 0}}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseBackendTrafficPolicy(b)
	})
}
