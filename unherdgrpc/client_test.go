package unherdgrpc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdgrpc"
)

// newClient returns a Client with cfg, no backoff and no budget unless
// cfg sets them, so tests run at once.
func newClient(t testing.TB, cfg unherdgrpc.Config) *unherdgrpc.Client {
	t.Helper()
	if cfg.Retry.Budget == nil {
		cfg.Retry.Budget = budget.Unlimited
	}
	if cfg.Retry.Backoff == (backoff.Schedule{}) {
		cfg.Retry.Backoff = backoff.Schedule{Immediate: true}
	}
	c, err := unherdgrpc.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func unary(ctx context.Context, cc *grpc.ClientConn) (*testpb.SimpleResponse, error) {
	return testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hi")}})
}

func TestUnaryRetriesUnavailable(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := map[bool]string{false: "bufconn", true: "tcp"}[tcp]
		t.Run(name, func(t *testing.T) {
			s := &faultServer{plan: []fault{{code: codes.Unavailable}, {code: codes.Unavailable}}}
			c := newClient(t, unherdgrpc.Config{})
			cc := serve(t, s, tcp, nil, c.DialOptions()...)
			resp, err := unary(context.Background(), cc)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetUsername() != "hi" {
				t.Errorf("reply %v, want the request's payload echoed", resp)
			}
			if got := s.count(); got != 3 {
				t.Fatalf("server saw %d requests, want 3", got)
			}
			for i, want := range []string{"", "1", "2"} {
				md := s.md(i)
				if got := first(md.Get(unherdgrpc.PreviousAttemptsKey)); got != want {
					t.Errorf("request %d: %s = %q, want %q", i, unherdgrpc.PreviousAttemptsKey, got, want)
				}
				if got := first(md.Get(unherdgrpc.RetriesKey)); got != "3" {
					t.Errorf("request %d: %s = %q, want 3", i, unherdgrpc.RetriesKey, got)
				}
			}
		})
	}
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

func TestUnaryClassification(t *testing.T) {
	tests := []struct {
		name     string
		code     codes.Code
		codes    map[codes.Code]retry.Class
		requests int // with every attempt failing, out of 3 allowed
		reason   error
	}{
		{"unavailable is transient", codes.Unavailable, nil, 3, retry.ErrAttemptsExhausted},
		{"resource exhausted is throttled", codes.ResourceExhausted, nil, 3, retry.ErrAttemptsExhausted},
		{"invalid argument is permanent", codes.InvalidArgument, nil, 1, retry.ErrPermanent},
		{"internal is permanent", codes.Internal, nil, 1, retry.ErrPermanent},
		{"server deadline exceeded is permanent", codes.DeadlineExceeded, nil, 1, retry.ErrPermanent},
		{"server cancelled is never retried", codes.Canceled, map[codes.Code]retry.Class{codes.Canceled: retry.Transient}, 1, retry.ErrPermanent},
		{"configured aborted is retried", codes.Aborted, map[codes.Code]retry.Class{codes.Aborted: retry.Transient}, 3, retry.ErrAttemptsExhausted},
		{"configured unavailable is permanent", codes.Unavailable, map[codes.Code]retry.Class{codes.Unavailable: retry.Permanent}, 1, retry.ErrPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fault{code: tt.code}
			s := &faultServer{plan: []fault{f, f, f}}
			var classes []retry.Class
			cfg := unherdgrpc.Config{Codes: tt.codes}
			cfg.Retry.OnRetry = func(ev retry.RetryEvent) { classes = append(classes, ev.Class) }
			cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
			_, err := unary(context.Background(), cc)
			if got := status.Code(err); got != tt.code {
				t.Errorf("status.Code = %v, want the server's %v (err %v)", got, tt.code, err)
			}
			st, _ := status.FromError(err)
			if st.Message() != "injected "+tt.code.String() {
				t.Errorf("status message %q, want the server's own", st.Message())
			}
			if !errors.Is(err, tt.reason) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.reason)
			}
			if got := s.count(); got != tt.requests {
				t.Errorf("server saw %d requests, want %d", got, tt.requests)
			}
			if tt.code == codes.ResourceExhausted && (len(classes) == 0 || classes[0] != retry.Throttled) {
				t.Errorf("retry classes %v, want throttled", classes)
			}
		})
	}
}

func TestUnaryPushback(t *testing.T) {
	tests := []struct {
		name     string
		pushback string
		requests int
		minDelay time.Duration // of the one retry, when there is one
	}{
		{"valid pushback is a floor", "30", 2, 30 * time.Millisecond},
		{"zero pushback retries on the schedule", "0", 2, 0},
		{"negative pushback stops", "-1", 1, 0},
		{"malformed pushback stops", "soon", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &faultServer{plan: []fault{{code: codes.Unavailable, pushback: tt.pushback}}}
			var delays []time.Duration
			cfg := unherdgrpc.Config{}
			cfg.Retry.OnRetry = func(ev retry.RetryEvent) { delays = append(delays, ev.Delay) }
			cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
			_, err := unary(context.Background(), cc)
			if got := s.count(); got != tt.requests {
				t.Fatalf("server saw %d requests, want %d (err %v)", got, tt.requests, err)
			}
			if tt.requests == 1 {
				if !errors.Is(err, retry.ErrFinal) || status.Code(err) != codes.Unavailable {
					t.Errorf("err = %v, want ErrFinal with UNAVAILABLE", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The floor rule: at least the pushback, at most 10% more.
			if d := delays[0]; d < tt.minDelay || d > tt.minDelay+tt.minDelay/10 {
				t.Errorf("retry delay %v, want in [%v, %v]", d, tt.minDelay, tt.minDelay+tt.minDelay/10)
			}
		})
	}

}

func TestUnaryPushbackTooLong(t *testing.T) {
	s := &faultServer{plan: []fault{{code: codes.ResourceExhausted, pushback: "60000"}}}
	cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
	_, err := unary(context.Background(), cc)
	if !errors.Is(err, retry.ErrServerDelayTooLong) || s.count() != 1 {
		t.Fatalf("err = %v after %d requests, want ErrServerDelayTooLong after 1", err, s.count())
	}
}

func TestUnaryAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &faultServer{plan: []fault{{untilDone: true}}}
		cfg := unherdgrpc.Config{}
		cfg.Retry.AttemptTimeout = 50 * time.Millisecond
		var classes []retry.Class
		cfg.Retry.OnRetry = func(ev retry.RetryEvent) { classes = append(classes, ev.Class) }
		cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
		if _, err := unary(context.Background(), cc); err != nil {
			t.Fatal(err)
		}
		if s.count() != 2 || len(classes) != 1 || classes[0] != retry.Timeout {
			t.Fatalf("%d requests, retry classes %v; want 2 and one timeout", s.count(), classes)
		}
	})
}

func TestUnaryCallerDeadlineNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &faultServer{plan: []fault{{untilDone: true}, {untilDone: true}}}
		cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := unary(ctx, cc)
		// ErrCancelled when the context's timer ended the call first, ErrFinal
		// when the server's DEADLINE_EXCEEDED arrived a moment before it.
		if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, retry.ErrCancelled) && !errors.Is(err, retry.ErrFinal) {
			t.Fatalf("err = %v, want DEADLINE_EXCEEDED, cancelled or final", err)
		}
		if s.count() != 1 {
			t.Fatalf("server saw %d requests, want 1", s.count())
		}
	})
}

func TestUnaryCallerCancelNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &faultServer{plan: []fault{{untilDone: true}, {untilDone: true}}}
		cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := unary(ctx, cc)
		if status.Code(err) != codes.Canceled || s.count() != 1 {
			t.Fatalf("err = %v after %d requests, want CANCELLED after 1", err, s.count())
		}
	})
}

func TestUnaryNestedDoesNotRetry(t *testing.T) {
	s := &faultServer{plan: []fault{{code: codes.Unavailable}, {code: codes.Unavailable}}}
	cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
	_, err := unary(retry.WithOuterRetry(context.Background()), cc)
	if !errors.Is(err, retry.ErrAttemptsExhausted) || s.count() != 1 {
		t.Fatalf("err = %v after %d requests, want one attempt", err, s.count())
	}
	if got := s.md(0).Get(unherdgrpc.RetriesKey); len(got) != 0 {
		t.Errorf("a call that is not repeated sent %s %v", unherdgrpc.RetriesKey, got)
	}
}

func TestUnaryBudget(t *testing.T) {
	b, err := budget.NewTokenBucket(budget.TokenBucketConfig{Capacity: 14})
	if err != nil {
		t.Fatal(err)
	}
	f := fault{code: codes.Unavailable}
	s := &faultServer{plan: []fault{f, f, f, f, f, f}}
	cfg := unherdgrpc.Config{}
	cfg.Retry.Budget = b
	cfg.Retry.OnBudgetExhausted = retry.ReturnAtOnce
	cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
	_, err = unary(context.Background(), cc)
	if !errors.Is(err, retry.ErrBudgetExhausted) || s.count() != 2 {
		t.Fatalf("err = %v after %d requests; want the budget to allow one retry", err, s.count())
	}
}

// The service config's own retries would multiply with the interceptor's;
// dialled with DialOptions they are off, and interceptors installed by
// hand keep grpc-go from repeating an attempt.
func TestChannelRetries(t *testing.T) {
	const sc = `{"methodConfig":[{"name":[{"service":"grpc.testing.TestService"}],
		"retryPolicy":{"maxAttempts":5,"initialBackoff":"0.001s","maxBackoff":"0.001s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}}]}`
	f := fault{code: codes.Unavailable}
	t.Run("DialOptions", func(t *testing.T) {
		s := &faultServer{plan: []fault{f, f, f, f, f, f, f, f, f}}
		c := newClient(t, unherdgrpc.Config{})
		cc := serve(t, s, false, nil, append(c.DialOptions(), grpc.WithDefaultServiceConfig(sc))...)
		_, err := unary(context.Background(), cc)
		if status.Code(err) != codes.Unavailable || s.count() != 3 {
			t.Fatalf("err = %v after %d requests, want 3 (the Client's), not 15", err, s.count())
		}
	})
	t.Run("by hand", func(t *testing.T) {
		s := &faultServer{plan: []fault{f, f, f, f, f, f, f, f, f}}
		c := newClient(t, unherdgrpc.Config{})
		cc := serve(t, s, false, nil, grpc.WithDefaultServiceConfig(sc), grpc.WithUnaryInterceptor(c.UnaryClientInterceptor()))
		_, err := unary(context.Background(), cc)
		if status.Code(err) != codes.Unavailable || s.count() != 3 {
			t.Fatalf("err = %v after %d requests, want 3 (the Client's), not 15", err, s.count())
		}
	})
}

func TestInvalidConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  unherdgrpc.Config
	}{
		{"negative messages", unherdgrpc.Config{MaxBufferedMessages: -1}},
		{"negative bytes", unherdgrpc.Config{MaxBufferedBytes: -1}},
		{"unknown class", unherdgrpc.Config{Codes: map[codes.Code]retry.Class{codes.Aborted: 9}}},
		{"retry", unherdgrpc.Config{Retry: retry.Config{MaxAttempts: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := unherdgrpc.NewClient(tt.cfg); !errors.Is(err, unherdgrpc.ErrInvalidConfig) {
				t.Fatalf("NewClient: %v, want ErrInvalidConfig", err)
			}
		})
	}
	if _, err := unherdgrpc.NewServer(unherdgrpc.ServerConfig{Idempotency: &unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{TTL: -1}}}); !errors.Is(err, unherdgrpc.ErrInvalidConfig) {
		t.Fatalf("NewServer: %v, want ErrInvalidConfig", err)
	}
}

// The wait after a pushback is the pushback plus up to 10%, measured on
// the bubble's clock, with the default schedule (whose first delay, at
// most 50 ms, is shorter).
func TestUnaryPushbackWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &faultServer{plan: []fault{{code: codes.Unavailable, pushback: "3000"}}}
		c, err := unherdgrpc.NewClient(unherdgrpc.Config{})
		if err != nil {
			t.Fatal(err)
		}
		cc := serve(t, s, false, nil, c.DialOptions()...)
		start := time.Now()
		if _, err := unary(context.Background(), cc); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 3*time.Second || d > 3300*time.Millisecond {
			t.Fatalf("the call took %v, want 3s to 3.3s: the pushback is a floor with up to 10%% jitter", d)
		}
	})
}

// A pushback longer than the caller's deadline is not waited: the call
// ends at once.
func TestUnaryPushbackPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &faultServer{plan: []fault{{code: codes.Unavailable, pushback: "3000"}}}
		cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := unary(ctx, cc)
		if !errors.Is(err, retry.ErrDeadline) || status.Code(err) != codes.Unavailable || time.Since(start) != 0 {
			t.Fatalf("err %v after %v; want ErrDeadline with UNAVAILABLE, at once", err, time.Since(start))
		}
	})
}
