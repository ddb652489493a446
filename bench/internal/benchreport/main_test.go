package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/unherd/unherd/bench
cpu: AMD EPYC
BenchmarkFirstSuccess/floor-direct-2   	100	 2.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkFirstSuccess/unherd-2         	100	 8.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkFirstSuccess/unherd-2         	100	 9.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkFirstSuccess/unherd-2         	100	 50.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkFirstSuccess/go-retry-2       	100	 100 ns/op	 136 B/op	 5 allocs/op
BenchmarkFirstSuccess/retry-go-2       	100	 130 ns/op	 224 B/op	 4 allocs/op
BenchmarkRetry2/unherd-2               	100	 100 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetry2/go-retry-2             	100	 800 ns/op	 576 B/op	 10 allocs/op
BenchmarkHTTPGet/bare-2                	100	 40000 ns/op	 5000 B/op	 60 allocs/op
BenchmarkHTTPGet/unherd-2              	100	 40800 ns/op	 5100 B/op	 62 allocs/op
BenchmarkHTTPGet/bare-2                	100	 80000 ns/op	 5000 B/op	 60 allocs/op
BenchmarkHTTPGet/unherd-2              	100	 80400 ns/op	 5100 B/op	 62 allocs/op
BenchmarkHTTPGet/bare-2                	100	 20000 ns/op	 5000 B/op	 60 allocs/op
BenchmarkHTTPGet/unherd-2              	100	 20100 ns/op	 5100 B/op	 62 allocs/op
BenchmarkHTTPGet/retryablehttp-2       	100	 44000 ns/op	 6000 B/op	 70 allocs/op
BenchmarkHTTPGetParallel/bare-2        	100	 40000 ns/op
BenchmarkHTTPGetParallel/unherd-2      	100	 41600 ns/op
BenchmarkHTTPGetParallel/bare-2        	100	 80000 ns/op
BenchmarkHTTPGetParallel/unherd-2      	100	 80400 ns/op
BenchmarkHTTPGetParallel/bare-2        	100	 20000 ns/op
BenchmarkHTTPGetParallel/unherd-2      	100	 20100 ns/op
BenchmarkRetryWait/floor-timer-2       	100	 600 ns/op	 248 B/op	 3 allocs/op
BenchmarkRetryWait/unherd-2            	100	 650 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetryWait/cenkalti-backoff-2  	100	 900 ns/op	 400 B/op	 10 allocs/op
BenchmarkRetryWait/floor-timer-2       	100	 500 ns/op	 248 B/op	 3 allocs/op
BenchmarkRetryWait/unherd-2            	100	 650 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetryWait/cenkalti-backoff-2  	100	 800 ns/op	 400 B/op	 10 allocs/op
BenchmarkPipeline/floor-timeout-2      	100	 400 ns/op	 272 B/op	 4 allocs/op
BenchmarkPipeline/unherd-2             	100	 430 ns/op	 272 B/op	 4 allocs/op
BenchmarkPipeline/failsafe-go-2        	100	 1800 ns/op	 1288 B/op	 30 allocs/op
BenchmarkPipeline/floor-timeout-2      	100	 600 ns/op	 272 B/op	 4 allocs/op
BenchmarkPipeline/unherd-2             	100	 640 ns/op	 272 B/op	 4 allocs/op
BenchmarkPipeline/failsafe-go-2        	100	 2000 ns/op	 1288 B/op	 30 allocs/op
BenchmarkPipeline/floor-timeout-2      	100	 500 ns/op	 272 B/op	 4 allocs/op
BenchmarkPipeline/unherd-2             	100	 580 ns/op	 272 B/op	 4 allocs/op
BenchmarkPipeline/failsafe-go-2        	100	 1900 ns/op	 1288 B/op	 30 allocs/op
BenchmarkBudgetParallel/unherd-2       	100	 15 ns/op	 0 B/op	 0 allocs/op
BenchmarkBudgetParallel/failsafe-go-2  	100	 30 ns/op	 0 B/op	 0 allocs/op
BenchmarkHedge/unherd-2                	100	 2000000 ns/op	 0.05 extra-req/op	 30 allocs/op
BenchmarkHedge/failsafe-go-2           	100	 3000000 ns/op	 0.5 extra-req/op	 90 allocs/op
BenchmarkLimit/floor-clock-2           	100	 90 ns/op	 1 admitted/op	 0 B/op	 0 allocs/op
BenchmarkLimit/unherd-2                	100	 140 ns/op	 1 admitted/op	 0 B/op	 0 allocs/op
BenchmarkLimit/unherd-fixed-2          	100	 120 ns/op	 1 admitted/op	 0 B/op	 0 allocs/op
BenchmarkLimit/failsafe-go-2           	100	 350 ns/op	 1 admitted/op	 96 B/op	 1 allocs/op
BenchmarkLimit/failsafe-go-bulkhead-2  	100	 30 ns/op	 1 admitted/op	 0 B/op	 0 allocs/op
PASS
`

func TestReading(t *testing.T) {
	tests := []struct {
		scenario string
		want     []string // substrings the reading must contain
	}{
		{"FirstSuccess", []string{
			"unherd 9 ns/op", // median of 8, 9, 50: an outlier does not move it
			"fastest peer go-retry 100 ns/op, 5 allocs/op: unherd is 11.11x faster as the ratio of the medians",
			"Target (>= 10x faster than the fastest peer, 0 allocs/op): met.",
		}},
		{"Retry2", []string{
			"Floor (a floor, not equal work",
			"unherd is 8.00x faster",
		}},
		{"RetryWait", []string{
			// Rounds: 650/600 = 1.083 and 650/500 = 1.3; median 1.19.
			"floor-timer 550 ns/op, 3 allocs/op: unherd/floor-timer 1.19 per round (range 1.08 to 1.30)",
			"fastest peer cenkalti-backoff 850 ns/op, 10 allocs/op: unherd is 1.31x faster as the median of the per-round ratios (range 1.23x to 1.38x)",
			"Target (<= 1.2x floor-timer, <= 1 allocs/op): met.",
		}},
		{"Pipeline", []string{
			// Differences per round: 30, 40, 80 ns.
			"unherd - floor-timeout +40 ns per round (range 30 ns to 80 ns)",
			"Target (<= 50 ns above floor-timeout, allocs/op <= floor-timeout's): met.",
		}},
		{"BudgetParallel", []string{
			"Target (>= 3x faster than failsafe-go, <= 20 ns/op, 0 allocs/op): MISSED.",
		}},
		{"HTTPGet", []string{
			// Rounds of 40, 80 and 20 µs: the ratio of the medians is
			// 1.02; the ratios per round 1.02, 1.005 and 1.005.
			"bare transport 40 µs/op: unherd overhead +0.5% as the median of the per-round ratios (range +0.5% to +2.0%; +2.0% as the ratio of the medians)",
			"fastest peer retryablehttp 44 µs/op",
			"Target (overhead <= 3%): met.",
		}},
		{"HTTPGetParallel", []string{
			// The medians are 41.6 and 40 µs, 4% apart, but the rounds
			// are 4%, 0.5% and 0.5% apart: the verdict follows the rounds.
			"unherd overhead +0.5% as the median of the per-round ratios (range +0.5% to +4.0%; +4.0% as the ratio of the medians)",
			"Target (overhead <= 3%): met.",
		}},
		{"Limit", []string{
			// Judged against the named peer, not the faster bulkhead,
			// and unherd-fixed is not a peer.
			"peer failsafe-go 350 ns/op, 1 allocs/op: unherd is 2.50x faster",
			"Target (>= 3x faster than failsafe-go, 0 allocs/op): MISSED.",
		}},
		{"Hedge", []string{
			"unherd 2 ms/op",
			"extra requests per call: unherd 0.05, failsafe-go 0.5",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			var out strings.Builder
			if err := run(&out, strings.NewReader(sample), tt.scenario); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("reading %q lacks %q", out.String(), w)
				}
			}
			if tg := targets[tt.scenario]; tg == (target{}) && strings.Contains(out.String(), "Target") {
				t.Errorf("reading %q states a target the scenario does not have", out.String())
			}
		})
	}
}

func TestReadingWithoutUnherd(t *testing.T) {
	var out strings.Builder
	if err := run(&out, strings.NewReader(sample), "NoSuchScenario"); err == nil {
		t.Fatalf("got reading %q for a scenario with no unherd case, want an error", out.String())
	}
}
