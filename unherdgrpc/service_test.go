package unherdgrpc_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/unherdgrpc"
)

// retryN is a retryPolicy of n attempts, 1 ms apart, on UNAVAILABLE.
func retryN(n string) string {
	return `{"maxAttempts":` + n + `,"initialBackoff":"0.001s","maxBackoff":"0.001s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}`
}

// The service config's name-matching rules, as grpc-go applies them
// (clientconn.go getMethodConfig, service_config.proto's MethodConfig.name):
// service and method, else service alone, else the empty name; the most
// specific entry wins whole; an entry without names is skipped.
func TestParseServiceConfigPicksByName(t *testing.T) {
	sc, err := unherdgrpc.ParseServiceConfig([]byte(`{
		"loadBalancingConfig": [{"round_robin": {}}],
		"methodConfig": [
			{"name": [{"service": "a.B", "method": "Get"}, {"service": "c.D", "method": "Get"}], "retryPolicy": ` + retryN("4") + `},
			{"name": [{"service": "a.B"}], "retryPolicy": ` + retryN("3") + `},
			{"name": [{"service": "a.B", "method": "Put"}], "timeout": "1s"},
			{"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.1s"}},
			{"retryPolicy": ` + retryN("5") + `}
		],
		"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method   string
		ok       bool
		attempts int  // retry attempts, for a retry policy
		hedged   bool // a hedging policy
	}{
		{"/a.B/Get", true, 4, false},
		{"/c.D/Get", true, 4, false},  // the entry's second name
		{"/a.B/List", true, 3, false}, // the service's entry
		{"/a.B/", true, 3, false},     // the service's entry
		{"/a.B/get", true, 3, false},  // names are case-sensitive
		{"/a.B/Gets", true, 3, false}, // and whole
		{"/a.B/Put", false, 0, false}, // its own entry, without a policy, wins whole
		{"/c.D/Other", true, 1, true}, // c.D has no service entry: the default
		{"/e.F/Get", true, 1, true},   // "Get" alone matches nothing
		{"/a.B.C/Get", true, 1, true}, // not a.B
		{"/A.b/Get", true, 1, true},   // case-sensitive
		{"/a.B/Get/x", true, 1, true}, // service "a.B/Get"
		{"/a.B/Put/", true, 1, true},  // service "a.B/Put"
		{"a.B/Get", true, 1, true},    // no leading slash
		{"//Get", true, 1, true},      // empty service
		{"malformed", true, 1, true},  // no slash at all
		{"", true, 1, true},           // the default
	}
	for _, tc := range tests {
		cfg, ok := sc.Policy(tc.method)
		if ok != tc.ok || cfg.Retry.MaxAttempts != tc.attempts || (cfg.Hedge != nil) != tc.hedged {
			t.Errorf("Policy(%q) = attempts %d, hedged %v, %v; want %d, %v, %v", tc.method, cfg.Retry.MaxAttempts, cfg.Hedge != nil, ok, tc.attempts, tc.hedged, tc.ok)
		}
		if (sc.Client(tc.method) != nil) != tc.ok {
			t.Errorf("Client(%q) = %v, want a Client: %v", tc.method, sc.Client(tc.method), tc.ok)
		}
	}
	// A6: one throttle per server name, shared by every method (the
	// hedging entry's is checked by TestGrpcJavaHedging_throttledByOtherCall).
	get, _ := sc.Policy("/a.B/Get")
	list, _ := sc.Policy("/a.B/List")
	if th := sc.Throttle(); th == nil || get.Retry.Budget != budget.Budget(th) || list.Retry.Budget != budget.Budget(th) {
		t.Errorf("budgets %p, %p; want the one throttle %p", get.Retry.Budget, list.Retry.Budget, sc.Throttle())
	}
	if sc.Client("/a.B/Get") != sc.Client("/c.D/Get") || sc.Client("/a.B/Get") == sc.Client("/a.B/List") {
		t.Errorf("the methods of one entry must share its Client, and only they")
	}
}

// Without retryThrottling the retry policies of a channel share one
// budget of unherd's default kind, and there is no throttle.
func TestParseServiceConfigWithoutThrottling(t *testing.T) {
	sc, err := unherdgrpc.ParseServiceConfig([]byte(`{"methodConfig": [
		{"name": [{"service": "a.B"}], "retryPolicy": ` + retryN("3") + `},
		{"name": [{"service": "c.D"}], "retryPolicy": ` + retryN("2") + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := sc.Policy("/a.B/X")
	cd, _ := sc.Policy("/c.D/X")
	if sc.Throttle() != nil || ab.Retry.Budget == nil || ab.Retry.Budget != cd.Retry.Budget {
		t.Errorf("throttle %v, budgets %v and %v; want no throttle and one shared budget", sc.Throttle(), ab.Retry.Budget, cd.Retry.Budget)
	}
	if _, ok := sc.Policy("/e.F/X"); ok {
		t.Errorf("a method no entry names has a policy")
	}
}

func TestParseServiceConfigErrors(t *testing.T) {
	tests := []struct{ name, js, want string }{
		{"malformed", `{`, "unexpected end"},
		{"method without service", `{"methodConfig":[{"name":[{"method":"Get"}],"retryPolicy":` + retryN("2") + `}]}`, `methodConfig[0]: name with method "Get" has no service`},
		{"name twice", `{"methodConfig":[{"name":[{"service":"a.B"}],"retryPolicy":` + retryN("2") + `},{"name":[{"service":"a.B"}]}]}`, `methodConfig[1]: name "/a.B/" is listed twice`},
		{"default twice", `{"methodConfig":[{"name":[{}]},{"name":[{"service":""}]}]}`, `methodConfig[1]: name "" is listed twice`},
		{"both policies", `{"methodConfig":[{"name":[{}],"retryPolicy":` + retryN("2") + `,"hedgingPolicy":{"maxAttempts":2}}]}`, "methodConfig[0]: unherdgrpc: service config does not convert: methodConfig sets both"},
		{"bad policy", `{"methodConfig":[{"name":[{}]},{"name":[{"service":"a.B"}],"retryPolicy":` + retryN("1") + `}]}`, "methodConfig[1]: unherdgrpc: service config does not convert: retryPolicy.maxAttempts 1 must be at least 2"},
		{"bad throttling", `{"retryThrottling":{"maxTokens":1001,"tokenRatio":0.1}}`, "maxTokens 1001 is outside (0, 1000]"},
		{"ratio below a thousandth", `{"retryThrottling":{"maxTokens":10,"tokenRatio":0.0009}}`, "0 at three decimal places"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := unherdgrpc.ParseServiceConfig([]byte(tc.js))
			if !errors.Is(err, unherdgrpc.ErrServiceConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrServiceConfig mentioning %q", err, tc.want)
			}
		})
	}
}

// The interceptors of a ServiceConfig, on a real server over loopback
// TCP, retry each method by its own entry and leave alone a method whose
// entry sets no policy.
func TestServiceConfigInterceptorsPickByName(t *testing.T) {
	sc, err := unherdgrpc.ParseServiceConfig([]byte(`{"methodConfig": [
		{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}], "retryPolicy": ` + retryN("4") + `},
		{"name": [{"service": "grpc.testing.TestService"}], "timeout": "5s"},
		{"name": [{}], "retryPolicy": ` + retryN("2") + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, byHand := range []bool{false, true} {
		s := newScript(step{code: codes.Unavailable}, step{code: codes.Unavailable}, step{code: codes.Unavailable}, step{code: codes.Unavailable}, step{code: codes.Unavailable})
		opts := sc.DialOptions()
		if byHand {
			opts = []grpc.DialOption{grpc.WithChainUnaryInterceptor(sc.UnaryClientInterceptor()), grpc.WithChainStreamInterceptor(sc.StreamClientInterceptor())}
		}
		client := testpb.NewTestServiceClient(serve(t, s, true, nil, opts...))
		_, err := client.UnaryCall(bounded(t), &testpb.SimpleRequest{})
		if status.Code(err) != codes.Unavailable || s.count() != 4 {
			t.Fatalf("by hand %v: UnaryCall: %v after %d requests; want UNAVAILABLE after 4 (its own entry)", byHand, err, s.count())
		}
		stream, err := client.StreamingOutputCall(bounded(t), &testpb.StreamingOutputCallRequest{})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Unavailable || s.count() != 5 {
			t.Fatalf("by hand %v: StreamingOutputCall: %v after %d requests in all; want UNAVAILABLE after 1 more (the service's entry has no policy)", byHand, err, s.count())
		}
	}
}

// gRFC A6, "Throttling Retry Attempts and Hedged RPCs": "The throttling
// is done per server name", and "every outgoing RPC (regardless of
// service or method invoked)" counts: the failures of one method stop
// the retries of another on the same channel.
func TestA6ThrottlingIsPerChannel(t *testing.T) {
	sc, err := unherdgrpc.ParseServiceConfig([]byte(`{"methodConfig": [
		{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}], "retryPolicy": ` + retryN("2") + `},
		{"name": [{"service": "grpc.testing.TestService", "method": "StreamingOutputCall"}], "retryPolicy": ` + retryN("5") + `}],
		"retryThrottling": {"maxTokens": 4, "tokenRatio": 0.8}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := newScript(step{code: codes.Unavailable}, step{code: codes.Unavailable}, step{code: codes.Unavailable})
	client := testpb.NewTestServiceClient(serve(t, s, true, nil, sc.DialOptions()...))
	// UnaryCall: 4 -> 3 tokens, retried (3 > 2), 3 -> 2.
	if _, err := client.UnaryCall(bounded(t), &testpb.SimpleRequest{}); status.Code(err) != codes.Unavailable || s.count() != 2 {
		t.Fatalf("UnaryCall: %v after %d requests; want UNAVAILABLE after 2", err, s.count())
	}
	// StreamingOutputCall, another method: 2 -> 1 token, not retried
	// (1 <= 2), although its policy allows 5 attempts.
	stream, err := client.StreamingOutputCall(bounded(t), &testpb.StreamingOutputCallRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unavailable || s.count() != 3 {
		t.Fatalf("StreamingOutputCall: %v after %d requests in all; want UNAVAILABLE after 1 more (throttled by the other method's failures)", err, s.count())
	}
	if got := sc.Throttle().Tokens(); got != 1 {
		t.Errorf("throttle holds %v tokens, want 1", got)
	}
}

func FuzzParseServiceConfig(f *testing.F) {
	f.Add([]byte(`{"methodConfig":[{"name":[{"service":"a.B"}],"retryPolicy":`+retryN("3")+`}],"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}`), "/a.B/C")
	f.Add([]byte(`{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0s"}},{"name":[{"service":"x","method":"y"}]}]}`), "/x/y")
	f.Fuzz(func(t *testing.T, js []byte, method string) {
		sc, err := unherdgrpc.ParseServiceConfig(js)
		if err != nil {
			if !errors.Is(err, unherdgrpc.ErrServiceConfig) {
				t.Fatalf("error %v does not wrap ErrServiceConfig", err)
			}
			return
		}
		cfg, ok := sc.Policy(method)
		if !ok {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Policy(%q) does not validate: %v", method, err)
		}
		if sc.Client(method) == nil {
			t.Fatalf("Policy(%q) has no Client", method)
		}
	})
}
