package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
)

func TestPolicyFields(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want map[string]any
	}{
		{"zero is the defaults", Policy{},
			map[string]any{"name": "yours", "attempts": 3, "base": "50ms", "cap": "20s", "jitter": "full", "budget": "token"}},
		{"ratio budget with its default share",
			Policy{Name: "mine", Retry: retry.Config{MaxAttempts: 4, Backoff: backoff.Schedule{Base: 10 * time.Millisecond, Cap: time.Second, Jitter: backoff.None}},
				Budget: "ratio"},
			map[string]any{"name": "mine", "attempts": 4, "base": "10ms", "cap": "1s", "jitter": "none",
				"budget": map[string]any{"kind": "ratio", "ratio": 0.1}}},
		{"ratio share given", Policy{Budget: "ratio", BudgetRatio: 0.2},
			map[string]any{"name": "yours", "attempts": 3, "base": "50ms", "cap": "20s", "jitter": "full",
				"budget": map[string]any{"kind": "ratio", "ratio": 0.2}}},
		{"attempt timeout", Policy{Retry: retry.Config{AttemptTimeout: 1500 * time.Millisecond}},
			map[string]any{"name": "yours", "attempts": 3, "base": "50ms", "cap": "20s", "jitter": "full", "budget": "token",
				"timeouts": map[string]any{"attempt": "1.5s"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.p.Fields()); diff != "" {
				t.Errorf("Fields (-want +got):\n%s", diff)
			}
		})
	}
}
