package unherdgrpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/unherdgrpc"
)

func TestParseMethodConfigRetry(t *testing.T) {
	tests := []struct {
		name     string
		mc       string
		attempts int
		sched    backoff.Schedule
		timeout  time.Duration
		retried  []codes.Code
	}{
		{
			name: "doubling",
			mc: `{"name":[{"service":"a.B"}],"timeout":"2s","retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s",
				"maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE","RESOURCE_EXHAUSTED"]}}`,
			attempts: 4,
			sched:    backoff.Schedule{Base: 100 * time.Millisecond, ThrottledBase: 100 * time.Millisecond, Cap: time.Second},
			retried:  []codes.Code{codes.Unavailable, codes.ResourceExhausted},
		},
		{
			name: "constant, numeric code, attempts capped at 5, attempt timeout",
			mc: `{"retryPolicy":{"maxAttempts":9,"initialBackoff":"0.05s","maxBackoff":"0.5s","backoffMultiplier":1,
				"retryableStatusCodes":[10],"perAttemptRecvTimeout":"0.25s"}}`,
			attempts: 5,
			sched:    backoff.Schedule{Base: 50 * time.Millisecond, ThrottledBase: 50 * time.Millisecond, Cap: 500 * time.Millisecond, Constant: true},
			timeout:  250 * time.Millisecond,
			retried:  []codes.Code{codes.Aborted},
		},
		{
			name: "multiplier 1.5, as A6 allows any positive one",
			mc: `{"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"2s","backoffMultiplier":1.5,
				"retryableStatusCodes":["UNAVAILABLE"]}}`,
			attempts: 3,
			sched:    backoff.Schedule{Base: 100 * time.Millisecond, ThrottledBase: 100 * time.Millisecond, Cap: 2 * time.Second, Multiplier: 1.5},
			retried:  []codes.Code{codes.Unavailable},
		},
		{
			name: "multiplier below 1 shrinks",
			mc: `{"retryPolicy":{"maxAttempts":3,"initialBackoff":"1s","maxBackoff":"2s","backoffMultiplier":0.5,
				"retryableStatusCodes":["UNAVAILABLE"]}}`,
			attempts: 3,
			sched:    backoff.Schedule{Base: time.Second, ThrottledBase: time.Second, Cap: 2 * time.Second, Multiplier: 0.5},
			retried:  []codes.Code{codes.Unavailable},
		},
		{
			name: "codes in A6's case-insensitive string form",
			mc: `{"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,
				"retryableStatusCodes":["unavailable","Aborted",4]}}`,
			attempts: 2,
			sched:    backoff.Schedule{Base: time.Second, ThrottledBase: time.Second, Cap: time.Second},
			retried:  []codes.Code{codes.Unavailable, codes.Aborted, codes.DeadlineExceeded},
		},
		{
			name: "initial above max is capped",
			mc: `{"retryPolicy":{"maxAttempts":2,"initialBackoff":"3s","maxBackoff":"1s","backoffMultiplier":2,
				"retryableStatusCodes":["UNAVAILABLE"]}}`,
			attempts: 2,
			sched:    backoff.Schedule{Base: time.Second, ThrottledBase: time.Second, Cap: time.Second},
			retried:  []codes.Code{codes.Unavailable},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := unherdgrpc.ParseMethodConfig([]byte(tt.mc), nil)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Retry.MaxAttempts != tt.attempts || cfg.Retry.AttemptTimeout != tt.timeout || cfg.Hedge != nil || cfg.Retry.Budget != nil {
				t.Errorf("MaxAttempts %d, AttemptTimeout %v, Hedge %v, Budget %v; want %d, %v, nil, nil (unherd's default)",
					cfg.Retry.MaxAttempts, cfg.Retry.AttemptTimeout, cfg.Hedge, cfg.Retry.Budget, tt.attempts, tt.timeout)
			}
			if diff := cmp.Diff(tt.sched, cfg.Retry.Backoff); diff != "" {
				t.Errorf("Backoff (-want +got):\n%s", diff)
			}
			for c := codes.OK; c <= codes.Unauthenticated; c++ {
				want := failure.Permanent
				for _, r := range tt.retried {
					if r == c {
						want = failure.Transient
						if c == codes.ResourceExhausted {
							want = failure.Throttled
						}
					}
				}
				if got := cfg.Codes[c]; got != want {
					t.Errorf("Codes[%v] = %v, want %v", c, got, want)
				}
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("converted config does not validate: %v", err)
			}
		})
	}
}

func TestParseMethodConfigHedgingAndThrottling(t *testing.T) {
	cfg, err := unherdgrpc.ParseMethodConfig(
		[]byte(`{"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0.02s","nonFatalStatusCodes":["UNAVAILABLE"]}}`),
		[]byte(`{"maxTokens":10,"tokenRatio":0.1}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hedge == nil || cfg.Hedge.MaxHedges() != 2 || cfg.Retry.MaxAttempts != 1 {
		t.Fatalf("Hedge %v, MaxAttempts %d; want 2 hedges and no retries", cfg.Hedge, cfg.Retry.MaxAttempts)
	}
	if d, ok := cfg.Hedge.Delay(); !ok || d != 20*time.Millisecond {
		t.Errorf("hedge delay %v, want 20ms", d)
	}
	// The retry policy's budget asks the throttle before each hedge, and
	// the interceptor records each request with it as A6 counts them
	// (TestGrpcJavaHedging_throttledByHedgingStreams): the budget itself
	// records nothing, so failures recorded through it leave the
	// throttle (10 tokens, threshold 5) allowing hedges.
	b := cfg.Retry.Budget
	if b == nil || b == budget.Unlimited {
		t.Fatalf("Retry.Budget %v, want the throttle's", b)
	}
	for range 10 {
		b.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
	}
	if !b.Withdraw(failure.Transient) {
		t.Error("the retry policy's budget recorded failures into the throttle")
	}
}

func TestParseMethodConfigErrors(t *testing.T) {
	const ok = `"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]`
	tests := []struct {
		name, mc, rt, want string
	}{
		{"malformed", `{`, ``, "methodConfig"},
		{"no policy", `{"name":[]}`, ``, "neither"},
		{"both", `{"retryPolicy":{` + ok + `},"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"1s"}}`, ``, "both"},
		{"unknown field", `{"retryPolicy":{` + ok + `,"jitter":0.2}}`, ``, `unknown field "jitter"`},
		{"one attempt", `{"retryPolicy":{` + strings.Replace(ok, `"maxAttempts":3`, `"maxAttempts":1`, 1) + `}}`, ``, "maxAttempts 1 must be at least 2"},
		{"zero multiplier", `{"retryPolicy":{` + strings.Replace(ok, `"backoffMultiplier":2`, `"backoffMultiplier":0`, 1) + `}}`, ``, "backoffMultiplier 0 must be positive"},
		{"negative multiplier", `{"retryPolicy":{` + strings.Replace(ok, `"backoffMultiplier":2`, `"backoffMultiplier":-1.5`, 1) + `}}`, ``, "backoffMultiplier -1.5 must be positive"},
		{"no multiplier", `{"retryPolicy":{` + strings.Replace(ok, `,"backoffMultiplier":2`, ``, 1) + `}}`, ``, "backoffMultiplier is required"},
		{"bad duration", `{"retryPolicy":{` + strings.Replace(ok, `"0.1s"`, `"100ms"`, 1) + `}}`, ``, "initialBackoff"},
		{"zero backoff", `{"retryPolicy":{` + strings.Replace(ok, `"0.1s"`, `"0s"`, 1) + `}}`, ``, "must be positive"},
		{"no codes", `{"retryPolicy":{` + strings.Replace(ok, `"UNAVAILABLE"`, ``, 1) + `}}`, ``, "at least one code"},
		{"unknown code", `{"retryPolicy":{` + strings.Replace(ok, `"UNAVAILABLE"`, `"SOMETIMES"`, 1) + `}}`, ``, "invalid code"},
		{"OK retried", `{"retryPolicy":{` + strings.Replace(ok, `"UNAVAILABLE"`, `"OK"`, 1) + `}}`, ``, "lists OK"},
		{"throttling tokens", `{"retryPolicy":{` + ok + `}}`, `{"maxTokens":0,"tokenRatio":0.1}`, "maxTokens 0"},
		{"throttling ratio", `{"retryPolicy":{` + ok + `}}`, `{"maxTokens":10}`, "tokenRatio is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := unherdgrpc.ParseMethodConfig([]byte(tt.mc), []byte(tt.rt))
			if !errors.Is(err, unherdgrpc.ErrServiceConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrServiceConfig mentioning %q", err, tt.want)
			}
		})
	}
}

// A converted retryPolicy retries what the service config retried, and
// nothing grpc-go's own retries would not.
func TestParseMethodConfigRuns(t *testing.T) {
	cfg, err := unherdgrpc.ParseMethodConfig([]byte(`{"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.001s",
		"maxBackoff":"0.002s","backoffMultiplier":2,"retryableStatusCodes":["ABORTED"]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retry.Budget = budget.Unlimited
	c, err := unherdgrpc.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, u := fault{code: codes.Aborted}, fault{code: codes.Unavailable}
	s := &faultServer{plan: []fault{a, a, u}}
	cc := serve(t, s, false, nil, c.DialOptions()...)
	_, err = unary(context.Background(), cc)
	if status.Code(err) != codes.Unavailable || s.count() != 3 {
		t.Fatalf("err %v after %d requests; want UNAVAILABLE (not listed) to end it after 3", err, s.count())
	}
}

func FuzzParseMethodConfig(f *testing.F) {
	f.Add([]byte(`{"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}`), []byte(``))
	f.Add([]byte(`{"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0.5s","nonFatalStatusCodes":[14]}}`), []byte(`{"maxTokens":10,"tokenRatio":0.1}`))
	f.Add([]byte(`{"retryPolicy":{"maxAttempts":2,"initialBackoff":"-.5s","maxBackoff":"9999999999s","backoffMultiplier":1,"retryableStatusCodes":[1]}}`), []byte(`{"maxTokens":1e309,"tokenRatio":-1}`))
	f.Fuzz(func(t *testing.T, mc, rt []byte) {
		cfg, err := unherdgrpc.ParseMethodConfig(mc, rt)
		if err != nil {
			if !errors.Is(err, unherdgrpc.ErrServiceConfig) {
				t.Fatalf("error %v does not wrap ErrServiceConfig", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted config does not validate: %v", err)
		}
		if _, err := unherdgrpc.NewClient(cfg); err != nil {
			t.Fatalf("accepted config does not build: %v", err)
		}
	})
}
