package unherdgrpc_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdgrpc"
)

// flaky fails its first call with UNAVAILABLE.
type flaky struct {
	testpb.UnimplementedTestServiceServer
	calls atomic.Int32
}

func (f *flaky) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if f.calls.Add(1) == 1 {
		return nil, status.Error(codes.Unavailable, "warming up")
	}
	return &testpb.SimpleResponse{ServerId: "replica-1"}, nil
}

func ExampleClient_DialOptions() {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	f := &flaky{}
	testpb.RegisterTestServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	// The zero Config is the safe default; the example only makes the
	// retry immediate so that its output does not depend on time.
	c, err := unherdgrpc.NewClient(unherdgrpc.Config{Retry: retry.Config{Backoff: backoff.Schedule{Immediate: true}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := append(c.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	cc, err := grpc.NewClient("passthrough:///replica", opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	resp, err := testpb.NewTestServiceClient(cc).UnaryCall(context.Background(), &testpb.SimpleRequest{})
	fmt.Println(resp.GetServerId(), err, "after", f.calls.Load(), "calls")
	// Output: replica-1 <nil> after 2 calls
}

func ExampleParseMethodConfig() {
	cfg, err := unherdgrpc.ParseMethodConfig([]byte(`{
		"name": [{"service": "payments.Payments"}],
		"retryPolicy": {
			"maxAttempts": 4,
			"initialBackoff": "0.1s",
			"maxBackoff": "2s",
			"backoffMultiplier": 2,
			"retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
		}
	}`), []byte(`{"maxTokens": 10, "tokenRatio": 0.1}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attempts:", cfg.Retry.MaxAttempts, "base:", cfg.Retry.Backoff.Base, "cap:", cfg.Retry.Backoff.Cap)
	fmt.Println("UNAVAILABLE:", cfg.Codes[codes.Unavailable], "RESOURCE_EXHAUSTED:", cfg.Codes[codes.ResourceExhausted], "ABORTED:", cfg.Codes[codes.Aborted])
	fmt.Printf("budget: %T\n", cfg.Retry.Budget)

	cfg, err = unherdgrpc.ParseMethodConfig([]byte(`{"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s",
		"maxBackoff": "1s", "backoffMultiplier": 1.5, "retryableStatusCodes": ["UNAVAILABLE"]}}`), nil)
	fmt.Println("multiplier:", cfg.Retry.Backoff.Multiplier, "third ceiling:", cfg.Retry.Backoff.Temp(2, false), err)

	_, err = unherdgrpc.ParseMethodConfig([]byte(`{"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s",
		"maxBackoff": "1s", "backoffMultiplier": 0, "retryableStatusCodes": ["UNAVAILABLE"]}}`), nil)
	fmt.Println(err)
	// Output:
	// attempts: 4 base: 100ms cap: 2s
	// UNAVAILABLE: transient RESOURCE_EXHAUSTED: throttled ABORTED: permanent
	// budget: *budget.GRPC
	// multiplier: 1.5 third ceiling: 225ms <nil>
	// unherdgrpc: service config does not convert: retryPolicy.backoffMultiplier 0 must be positive
}

func ExampleParseServiceConfig() {
	sc, err := unherdgrpc.ParseServiceConfig([]byte(`{
		"loadBalancingConfig": [{"round_robin": {}}],
		"methodConfig": [
			{"name": [{"service": "payments.Payments"}],
			 "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "2s",
				"backoffMultiplier": 1.5, "retryableStatusCodes": ["UNAVAILABLE"]}},
			{"name": [{"service": "payments.Payments", "method": "Charge"}], "timeout": "2s"},
			{"name": [{}],
			 "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}
		],
		"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range []string{"/payments.Payments/Refund", "/payments.Payments/Charge", "/ledger.Ledger/Get"} {
		cfg, ok := sc.Policy(m)
		fmt.Println(m, ok, "attempts:", cfg.Retry.MaxAttempts, "hedged:", cfg.Hedge != nil)
	}
	fmt.Println("throttle tokens:", sc.Throttle().Tokens())
	// Dial with sc.DialOptions() to install it on the channel.
	// Output:
	// /payments.Payments/Refund true attempts: 4 hedged: false
	// /payments.Payments/Charge false attempts: 0 hedged: false
	// /ledger.Ledger/Get true attempts: 1 hedged: true
	// throttle tokens: 10
}
