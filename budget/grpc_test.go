package budget

import "testing"

func TestGRPC(t *testing.T) {
	tests := []struct {
		name  string
		cfg   GRPCConfig
		steps []step
	}{
		{"A6 arithmetic with the defaults", GRPCConfig{}, []step{
			rec(firstOK, 10),        // full: stays at maxTokens
			rec(fail(Transient), 9), // a retryable failure costs 1
			w(Transient, true, 9),   // 9 > 5: allowed, and free
			rec(fail(Timeout), 8),
			rec(fail(Throttled), 7), // pushback counts as a failure
			rec(fail(Permanent), 7), // a permanent failure does not
			rec(fail(Transient), 6),
			w(Timeout, true, 6),
			rec(fail(Transient), 5),
			w(Transient, false, 5),       // 5 is not above 10/2
			rec(retryOK(Transient), 5.1), // a success adds tokenRatio
			w(Throttled, true, 5.1),
			w(Permanent, false, 5.1), // never retried
		}},
		{"bounded at zero", GRPCConfig{MaxTokens: 2}, []step{
			rec(fail(Transient), 1),
			rec(fail(Transient), 0),
			rec(fail(Transient), 0), // not below zero
			rec(firstOK, 0.1),
			w(Transient, false, 0.1),
		}},
		{"three decimals", GRPCConfig{MaxTokens: 3, TokenRatio: 0.57}, []step{
			rec(fail(Transient), 2),
			w(Transient, true, 2), // 2 > 1.5
			rec(fail(Transient), 1),
			w(Transient, false, 1),
			rec(firstOK, 1.57), // 0.57 is 570 thousandths, not 569
			w(Transient, true, 1.57),
			rec(firstOK, 2.14),
			rec(firstOK, 2.71),
			rec(firstOK, 3), // capped
		}},
		{"threshold with an odd number of thousandths", GRPCConfig{MaxTokens: 1.001, TokenRatio: 0.0005}, []step{
			// TokenRatio 0.0005 rounds to 0.001.
			rec(fail(Transient), 0.001),
			w(Transient, false, 0.001),
			rec(firstOK, 0.002),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGRPC(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			runSteps(t, g, g.Tokens, tc.steps)
		})
	}
}

// TestGRPCThreshold checks "tokens > maxTokens/2" at the boundary, in
// thousandths, where float arithmetic would be easy to get wrong.
func TestGRPCThreshold(t *testing.T) {
	g, err := NewGRPC(GRPCConfig{MaxTokens: 1.001, TokenRatio: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	g.tokens.Store(500) // 0.500 < 0.5005
	if g.Withdraw(Transient) {
		t.Fatal("0.500 tokens of 1.001 allowed a retry")
	}
	g.tokens.Store(501) // 0.501 > 0.5005
	if !g.Withdraw(Transient) {
		t.Fatal("0.501 tokens of 1.001 refused a retry")
	}
}
