package budget

import (
	"testing"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
)

func TestGRPC(t *testing.T) {
	tests := []struct {
		name  string
		cfg   GRPCConfig
		steps []step
	}{
		{"A6 arithmetic with the defaults", GRPCConfig{}, []step{
			rec(firstOK, 10),                // full: stays at maxTokens
			rec(fail(failure.Transient), 9), // a retryable failure costs 1
			w(failure.Transient, true, 9),   // 9 > 5: allowed, and free
			rec(fail(failure.Timeout), 8),
			rec(fail(failure.Throttled), 7), // pushback counts as a failure
			rec(fail(failure.Permanent), 7), // a permanent failure does not
			rec(fail(failure.Transient), 6),
			w(failure.Timeout, true, 6),
			rec(fail(failure.Transient), 5),
			w(failure.Transient, false, 5),       // 5 is not above 10/2
			rec(retryOK(failure.Transient), 5.1), // a success adds tokenRatio
			w(failure.Throttled, true, 5.1),
			w(failure.Permanent, false, 5.1), // never retried
		}},
		{"bounded at zero", GRPCConfig{MaxTokens: 2}, []step{
			rec(fail(failure.Transient), 1),
			rec(fail(failure.Transient), 0),
			rec(fail(failure.Transient), 0), // not below zero
			rec(firstOK, 0.1),
			w(failure.Transient, false, 0.1),
		}},
		{"three decimals", GRPCConfig{MaxTokens: 3, TokenRatio: 0.57}, []step{
			rec(fail(failure.Transient), 2),
			w(failure.Transient, true, 2), // 2 > 1.5
			rec(fail(failure.Transient), 1),
			w(failure.Transient, false, 1),
			rec(firstOK, 1.57), // 0.57 is 570 thousandths, not 569
			w(failure.Transient, true, 1.57),
			rec(firstOK, 2.14),
			rec(firstOK, 2.71),
			rec(firstOK, 3), // capped
		}},
		{"threshold with an odd number of thousandths", GRPCConfig{MaxTokens: 1.001, TokenRatio: 0.0019}, []step{
			// TokenRatio 0.0019 is 0.001: the fourth decimal is dropped.
			rec(fail(failure.Transient), 0.001),
			w(failure.Transient, false, 0.001),
			rec(firstOK, 0.002),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := configtest.Must(NewGRPC(tc.cfg))(t)
			runSteps(t, g, g.Tokens, tc.steps)
		})
	}
}

// TestGRPCThreshold checks "tokens > maxTokens/2" at the boundary, in
// thousandths, where float arithmetic would be easy to get wrong.
func TestGRPCThreshold(t *testing.T) {
	g := configtest.Must(NewGRPC(GRPCConfig{MaxTokens: 1.001, TokenRatio: 0.001}))(t)
	g.tokens.Store(500) // 0.500 < 0.5005
	if g.Withdraw(failure.Transient) {
		t.Fatal("0.500 tokens of 1.001 allowed a retry")
	}
	g.tokens.Store(501) // 0.501 > 0.5005
	if !g.Withdraw(failure.Transient) {
		t.Fatal("0.501 tokens of 1.001 refused a retry")
	}
}

// TestGRPCTokenRatioPrecision checks A6's "up to 3 decimal places" as
// gRPC's C++ client reads a tokenRatio (it keeps the first three digits
// after the point and drops the rest) and its Java client computes it
// (the float times 1000, truncated): a success after one failure leaves
// maxTokens - 1 + tokenRatio at three decimals.
func TestGRPCTokenRatioPrecision(t *testing.T) {
	tests := []struct {
		ratio, maxTokens, want float64
	}{
		{0.1, 10, 9.1},
		{0.0015, 10, 9.001},   // not 9.002: the 5 is dropped
		{0.9999, 10, 9.999},   // not 10
		{0.57, 10, 9.57},      // 0.57*1000 is 569.99... in binary; the digits are 570
		{0.001, 10, 9.001},    // the smallest ratio
		{1.2345, 10, 10},      // 9 + 1.234, capped at maxTokens
		{0.5, 10.0009, 9.5},   // maxTokens 10.000: 9 + 0.5
		{0.25, 2.9999, 2.249}, // maxTokens 2.999: 1.999 + 0.25
	}
	for _, tc := range tests {
		g := configtest.Must(NewGRPC(GRPCConfig{MaxTokens: tc.maxTokens, TokenRatio: tc.ratio}))(t)
		g.Record(fail(failure.Transient))
		g.Record(firstOK)
		if got := g.Tokens(); got != tc.want {
			t.Errorf("maxTokens %v, tokenRatio %v: %v tokens after a failure and a success, want %v", tc.maxTokens, tc.ratio, got, tc.want)
		}
	}
	for _, ratio := range []float64{0.0009, 0.0005, 1e-9} {
		if _, err := NewGRPC(GRPCConfig{TokenRatio: ratio}); err == nil {
			t.Errorf("tokenRatio %v accepted; it is 0 at three decimal places", ratio)
		}
	}
}
