package unherdgrpc_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdgrpc"
)

// grpc-go issue 4615: maxAttempts was capped at 5 in the client's retry
// code, hard, so no configuration could retry more. Here A6's cap applies
// to a policy that comes from a service config (maxAttempts 10 reads as
// 5, as A6 asks of configs a resolver may deliver), and nowhere else: a
// client configured in code for 10 attempts makes 10.
func TestGRPCGoIssue4615(t *testing.T) {
	mc := []byte(`{"retryPolicy": {"maxAttempts": 10, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
		"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}`)
	cfg, err := unherdgrpc.ParseMethodConfig(mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retry.MaxAttempts != 5 {
		t.Errorf("a service config's maxAttempts 10 converts to %d attempts, want A6's cap of 5", cfg.Retry.MaxAttempts)
	}
	plan := make([]fault, 20)
	for i := range plan {
		plan[i] = fault{code: codes.Unavailable}
	}
	s := &faultServer{plan: plan}
	c := unherdgrpc.Config{Retry: retry.Config{MaxAttempts: 10, Budget: budget.Unlimited, Backoff: backoff.Schedule{Immediate: true}}}
	cc := serve(t, s, false, nil, newClient(t, c).DialOptions()...)
	_, err = unary(context.Background(), cc)
	if got := s.count(); got != 10 || !errors.Is(err, retry.ErrAttemptsExhausted) {
		t.Errorf("a client configured for 10 attempts: %d requests, error %v; want 10, attempts exhausted", got, err)
	}
}
