package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/unherd/unherd/backoff"
)

// The long workload's limit is a rate or 0, and sizes work of at most an
// hour at the limit.
func TestRatelimitLongLimitValidate(t *testing.T) {
	tests := []struct {
		name  string
		limit float64
		ok    bool
	}{
		{"default", 20, true},
		{"none", 0, true},
		{"an hour at it", 30000.0 / 3600, true},
		{"more than an hour", 8, false},
		{"negative", -1, false},
		{"NaN", math.NaN(), false},
		{"infinite", math.Inf(1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := defaultRatelimitParams()
			p.LongLimit = tt.limit
			err := p.Validate()
			if tt.ok != (err == nil) {
				t.Fatalf("LongLimit %v: Validate() = %v, want ok %v", tt.limit, err, tt.ok)
			}
			if err != nil && (!errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "long-limit")) {
				t.Errorf("LongLimit %v: error %q does not name --long-limit", tt.limit, err)
			}
		})
	}
}

// With --long-limit 0 the long workload and its claim are left out; with
// it, its rows run against that limit.
func TestRatelimitLongWorkload(t *testing.T) {
	for _, long := range []float64{0, 20} {
		p := defaultRatelimitParams()
		p.Workers, p.Jobs, p.Limit, p.LongLimit = 100, 2, 50, long
		r, err := ratelimitScenario.Run(context.Background(), p, Options{Seed: 1, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		rows, claims := 6, 3
		if long > 0 {
			rows, claims = 8, 4
		}
		if len(r.Rows) != rows || len(r.Claims) != claims {
			t.Fatalf("long-limit %v: %d rows and %d claims, want %d and %d", long, len(r.Rows), len(r.Claims), rows, claims)
		}
		if long > 0 {
			if got := r.Rows[6]["ideal_s"]; got != 10.0 {
				t.Errorf("long workload's ideal_s = %v, want 10 (200 requests at 20/s)", got)
			}
		}
	}
}

// BenchmarkRatelimitLong runs the long workload at its report size (3000
// x 10 requests against 20/s) with each strategy, and reports the
// attempts, each one event, handled per second.
func BenchmarkRatelimitLong(b *testing.B) {
	for _, j := range []struct {
		name   string
		jitter backoff.Jitter
	}{{"exponential", backoff.None}, {"full", backoff.Full}} {
		b.Run(j.name, func(b *testing.B) {
			p := defaultRatelimitParams()
			p.Limit = p.LongLimit
			var attempts int64
			for i := range b.N {
				out := runRatelimit(nil, 1, uint64(i), p, j.jitter)
				attempts += out.attempts
			}
			b.ReportMetric(float64(attempts)/b.Elapsed().Seconds(), "attempts/s")
		})
	}
}
