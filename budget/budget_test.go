package budget

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/failure"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// step is one call on a budget and what must follow: for a withdrawal, its
// answer; in any case, the tokens left (or, for a Ratio, unused).
type step struct {
	withdraw bool
	c        failure.Class
	a        Attempt
	ok       bool
	tokens   float64
}

func w(c failure.Class, ok bool, tokens float64) step {
	return step{withdraw: true, c: c, ok: ok, tokens: tokens}
}

func rec(a Attempt, tokens float64) step { return step{a: a, tokens: tokens} }

var (
	firstOK = Attempt{N: 1}
	fail    = func(c failure.Class) Attempt { return Attempt{N: 1, Failed: true, Class: c} }
	retryOK = func(charged failure.Class) Attempt { return Attempt{N: 2, Charged: charged} }
)

func TestClassString(t *testing.T) {
	for c, want := range map[failure.Class]string{failure.Transient: "transient", failure.Timeout: "timeout", failure.Throttled: "throttled", failure.Permanent: "permanent", 9: "unknown"} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String() = %q, want %q", c, got, want)
		}
	}
}

func TestUnlimited(t *testing.T) {
	for _, c := range []failure.Class{failure.Transient, failure.Timeout, failure.Throttled} {
		if !Unlimited.Withdraw(c) {
			t.Fatalf("Unlimited.Withdraw(%v) = false", c)
		}
	}
	Unlimited.Record(fail(failure.Transient))
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		validate func() error
		wantErr  string // substring naming the field; "" for valid
	}{
		{"token bucket zero", func() error { _, err := NewTokenBucket(TokenBucketConfig{}); return err }, ""},
		{"token bucket newer SDK costs", func() error {
			_, err := NewTokenBucket(TokenBucketConfig{TransientCost: 14, TimeoutCost: 14, ThrottledCost: 5})
			return err
		}, ""},
		{"negative capacity", func() error { _, err := NewTokenBucket(TokenBucketConfig{Capacity: -1}); return err }, "Capacity -1"},
		{"negative transient cost", func() error { _, err := NewTokenBucket(TokenBucketConfig{TransientCost: -5}); return err }, "TransientCost -5"},
		{"negative increment", func() error { _, err := NewTokenBucket(TokenBucketConfig{SuccessIncrement: -1}); return err }, "SuccessIncrement -1"},
		{"cost over capacity", func() error { _, err := NewTokenBucket(TokenBucketConfig{Capacity: 20, ThrottledCost: 21}); return err }, "ThrottledCost 21 exceeds Capacity 20"},
		{"default cost over small capacity", func() error { _, err := NewTokenBucket(TokenBucketConfig{Capacity: 8}); return err }, "TransientCost 14 exceeds Capacity 8"},

		{"grpc zero", func() error { _, err := NewGRPC(GRPCConfig{}); return err }, ""},
		{"grpc bounds", func() error { _, err := NewGRPC(GRPCConfig{MaxTokens: 1000, TokenRatio: 0.001}); return err }, ""},
		{"max tokens over 1000", func() error { _, err := NewGRPC(GRPCConfig{MaxTokens: 1000.5}); return err }, "MaxTokens 1000.5 is outside (0, 1000]"},
		{"negative max tokens", func() error { _, err := NewGRPC(GRPCConfig{MaxTokens: -1}); return err }, "MaxTokens -1"},
		{"NaN max tokens", func() error { _, err := NewGRPC(GRPCConfig{MaxTokens: nan()}); return err }, "MaxTokens NaN"},
		{"max tokens below a thousandth", func() error { _, err := NewGRPC(GRPCConfig{MaxTokens: 0.0004}); return err }, "MaxTokens 0.0004 is 0 at three decimal places"},
		{"negative token ratio", func() error { _, err := NewGRPC(GRPCConfig{TokenRatio: -0.1}); return err }, "TokenRatio -0.1"},
		{"token ratio below a thousandth", func() error { _, err := NewGRPC(GRPCConfig{TokenRatio: 0.0001}); return err }, "TokenRatio 0.0001 is 0 at three decimal places"},

		{"ratio zero", func() error { _, err := NewRatio(RatioConfig{}); return err }, ""},
		{"hedge budget", func() error { _, err := NewRatio(RatioConfig{Ratio: 0.05, NoFloor: true}); return err }, ""},
		{"negative ratio", func() error { _, err := NewRatio(RatioConfig{Ratio: -0.1}); return err }, "Ratio -0.1"},
		{"infinite ratio", func() error { _, err := NewRatio(RatioConfig{Ratio: inf()}); return err }, "Ratio +Inf"},
		{"negative floor", func() error { _, err := NewRatio(RatioConfig{MinPerSecond: -1}); return err }, "MinPerSecond -1"},
		{"floor and no floor", func() error { _, err := NewRatio(RatioConfig{MinPerSecond: 5, NoFloor: true}); return err }, "MinPerSecond 5 is set together with NoFloor"},
		{"negative window", func() error { _, err := NewRatio(RatioConfig{Window: -time.Second}); return err }, "Window -1s is negative"},
		{"tiny window", func() error { _, err := NewRatio(RatioConfig{Window: time.Microsecond}); return err }, "Window 1µs is shorter than 1ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one wrapping ErrInvalidConfig and containing %q", err, tc.wantErr)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }
func inf() float64 { z := 0.0; return 1 / z }
