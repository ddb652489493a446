package unherdgrpc_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/observe"
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
		codes    map[codes.Code]failure.Class
		requests int // with every attempt failing, out of 3 allowed
		reason   error
	}{
		{"unavailable is transient", codes.Unavailable, nil, 3, retry.ErrAttemptsExhausted},
		{"resource exhausted is throttled", codes.ResourceExhausted, nil, 3, retry.ErrAttemptsExhausted},
		{"invalid argument is permanent", codes.InvalidArgument, nil, 1, retry.ErrPermanent},
		{"internal is permanent", codes.Internal, nil, 1, retry.ErrPermanent},
		{"server deadline exceeded is permanent", codes.DeadlineExceeded, nil, 1, retry.ErrPermanent},
		{"server cancelled is never retried", codes.Canceled, map[codes.Code]failure.Class{codes.Canceled: failure.Transient}, 1, retry.ErrPermanent},
		{"configured aborted is retried", codes.Aborted, map[codes.Code]failure.Class{codes.Aborted: failure.Transient}, 3, retry.ErrAttemptsExhausted},
		{"configured unavailable is permanent", codes.Unavailable, map[codes.Code]failure.Class{codes.Unavailable: failure.Permanent}, 1, retry.ErrPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fault{code: tt.code}
			s := &faultServer{plan: []fault{f, f, f}}
			var classes []failure.Class
			cfg := unherdgrpc.Config{Codes: tt.codes}
			cfg.Retry.Observer = observe.On(observe.Retry, func(ev observe.Event) { classes = append(classes, ev.Class) })
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
			if tt.code == codes.ResourceExhausted && (len(classes) == 0 || classes[0] != failure.Throttled) {
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
			_, err := retryFloor(t, fault{code: codes.Unavailable, pushback: tt.pushback}, tt.requests, tt.minDelay)
			if tt.requests == 1 && (!errors.Is(err, retry.ErrFinal) || status.Code(err) != codes.Unavailable) {
				t.Errorf("err = %v, want ErrFinal with UNAVAILABLE", err)
			}
		})
	}
}

// retryFloor makes one unary call to a server whose first answer is f
// and whose next succeeds. It checks that the server saw requests
// requests and, when it saw two, that the call succeeded and its retry
// waited the floor rule's delay: at least floor, at most 10% more. It
// returns that delay, or the call's error when it was not retried.
func retryFloor(t *testing.T, f fault, requests int, floor time.Duration) (time.Duration, error) {
	t.Helper()
	s := &faultServer{plan: []fault{f}}
	var delays []time.Duration
	cfg := unherdgrpc.Config{}
	cfg.Retry.Observer = observe.On(observe.Retry, func(ev observe.Event) { delays = append(delays, ev.Delay) })
	cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
	_, err := unary(context.Background(), cc)
	if got := s.count(); got != requests {
		t.Fatalf("server saw %d requests, want %d (err %v)", got, requests, err)
	}
	if requests == 1 {
		return 0, err
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := delays[0]; d < floor || d > floor+floor/10 {
		t.Errorf("retry delay %v, want in [%v, %v]", d, floor, floor+floor/10)
	}
	return delays[0], nil
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
		var classes []failure.Class
		cfg.Retry.Observer = observe.On(observe.Retry, func(ev observe.Event) { classes = append(classes, ev.Class) })
		cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
		if _, err := unary(context.Background(), cc); err != nil {
			t.Fatal(err)
		}
		if s.count() != 2 || len(classes) != 1 || classes[0] != failure.Timeout {
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
		{"unknown class", unherdgrpc.Config{Codes: map[codes.Code]failure.Class{codes.Aborted: 9}}},
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

// Conformance with gRFC A6, "gRPC Retry Design"
// (https://github.com/grpc/proposal/blob/master/A6-client-retries.md):
// scenarios ported from the proposal's text, from grpc-go's
// test/retry_test.go and from grpc-java's hedging tests
// (RetriableStreamTest), each test named after its source, run against a
// real gRPC server on loopback TCP. Where unherd departs from a source on
// purpose, the test asserts unherd's documented rule and says why.

// step is what the scripted server does with one request, in the order
// the requests arrive.
type step struct {
	header   bool          // send response headers before anything else
	pushback []string      // grpc-retry-pushback-ms values for the trailer
	stall    time.Duration // wait this long (or until the request ends) first
	msgs     int           // stream: messages sent before the status
	code     codes.Code
}

// script is a TestService that answers the n-th request by its n-th step
// (OK once the steps run out) and records when each request arrived and
// whether it ended cancelled.
type script struct {
	testpb.UnimplementedTestServiceServer
	start time.Time

	mu        sync.Mutex
	steps     []step
	arrivals  []time.Duration
	cancelled int
}

func newScript(steps ...step) *script { return &script{start: time.Now(), steps: steps} }

func (s *script) next() step {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.arrivals)
	s.arrivals = append(s.arrivals, time.Since(s.start))
	if n < len(s.steps) {
		return s.steps[n]
	}
	return step{}
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrivals)
}

// run plays st on a request whose context is ctx; send sends a stream
// message (nil for a unary call).
func (s *script) run(ctx context.Context, st step, sendHeader func(metadata.MD) error, send func() error) error {
	if st.header {
		if err := sendHeader(metadata.Pairs("a6-test", "header")); err != nil {
			return err
		}
	}
	if err := stall(ctx, st.stall); err != nil {
		s.mu.Lock()
		s.cancelled++
		s.mu.Unlock()
		return err
	}
	for range st.msgs {
		if err := send(); err != nil {
			return err
		}
	}
	if len(st.pushback) != 0 {
		_ = grpc.SetTrailer(ctx, metadata.MD{unherdgrpc.PushbackKey: st.pushback})
	}
	if st.code != codes.OK {
		return status.Error(st.code, "scripted "+st.code.String())
	}
	return nil
}

func (s *script) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	st := s.next()
	err := s.run(ctx, st, func(md metadata.MD) error { return grpc.SendHeader(ctx, md) }, nil)
	if err != nil {
		return nil, err
	}
	return &testpb.SimpleResponse{}, nil
}

func (s *script) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	st := s.next()
	return s.run(stream.Context(), st, stream.SendHeader, func() error { return stream.Send(&testpb.StreamingOutputCallResponse{}) })
}

// a6Client converts a service config's methodConfig (and retryThrottling)
// and returns a client of s over loopback TCP.
func a6Client(t *testing.T, s *script, methodConfig, throttling string) testpb.TestServiceClient {
	t.Helper()
	cfg, err := unherdgrpc.ParseMethodConfig([]byte(methodConfig), []byte(throttling))
	if err != nil {
		t.Fatal(err)
	}
	c, err := unherdgrpc.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testpb.NewTestServiceClient(serve(t, s, true, nil, c.DialOptions()...))
}

// bounded returns a context that ends after a generous bound, so that a
// hang fails the test instead of stalling it.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// retry4 is grpc-go's retry_test.go policy: 4 attempts, 10 ms apart.
const retry4 = `{"retryPolicy":{"maxAttempts":4,"initialBackoff":".01s","maxBackoff":".01s","backoffMultiplier":1.0,"retryableStatusCodes":["UNAVAILABLE"]}}`

// A6, "When Retries are Valid": "An RPC becomes committed [when] the
// client receives Response-Headers". grpc-go's TestRetryStreaming case
// "No retry after header", for a unary call and for a stream whose
// caller never asks for the headers.
func TestA6CommitOnResponseHeaders(t *testing.T) {
	t.Run("unary", func(t *testing.T) {
		s := newScript(step{header: true, code: codes.Unavailable})
		_, err := a6Client(t, s, retry4, "").UnaryCall(bounded(t), &testpb.SimpleRequest{})
		if status.Code(err) != codes.Unavailable || s.count() != 1 {
			t.Fatalf("err %v after %d requests; want UNAVAILABLE after 1 (committed by the headers)", err, s.count())
		}
	})
	t.Run("stream", func(t *testing.T) {
		s := newScript(step{header: true, code: codes.Unavailable})
		stream, err := a6Client(t, s, retry4, "").StreamingOutputCall(bounded(t), &testpb.StreamingOutputCallRequest{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = stream.Recv()
		if status.Code(err) != codes.Unavailable || s.count() != 1 {
			t.Fatalf("err %v after %d requests; want UNAVAILABLE after 1 (committed by the headers)", err, s.count())
		}
	})
	t.Run("trailers-only is not committed", func(t *testing.T) {
		s := newScript(step{code: codes.Unavailable}, step{code: codes.Unavailable})
		_, err := a6Client(t, s, retry4, "").UnaryCall(bounded(t), &testpb.SimpleRequest{})
		if err != nil || s.count() != 3 {
			t.Fatalf("err %v after %d requests; want success after 3", err, s.count())
		}
	})
}

// grpc-go TestRetryStreaming, "No retry after header": the caller reads
// the headers, then the stream fails: one attempt.
func TestGRPCGoRetryStreamingNoRetryAfterHeader(t *testing.T) {
	s := newScript(step{header: true, code: codes.Unavailable})
	stream, err := a6Client(t, s, retry4, "").StreamingOutputCall(bounded(t), &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("Header: %v", err)
	}
	_, err = stream.Recv()
	if status.Code(err) != codes.Unavailable || s.count() != 1 {
		t.Fatalf("err %v after %d requests; want UNAVAILABLE after 1", err, s.count())
	}
}

// grpc-go TestRetryStreaming, "Retry via ClientStream.Header()": asking
// for the headers of an attempt that failed (trailers only) retries it,
// and the headers are the next attempt's.
func TestGRPCGoRetryStreamingRetryViaHeader(t *testing.T) {
	s := newScript(step{code: codes.Unavailable}, step{header: true, msgs: 1})
	stream, err := a6Client(t, s, retry4, "").StreamingOutputCall(bounded(t), &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := stream.Header()
	if err != nil || len(md.Get("a6-test")) != 1 {
		t.Fatalf("Header = %v, %v; want the second attempt's headers", md, err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if _, err := stream.Recv(); err != io.EOF || s.count() != 2 {
		t.Fatalf("Recv = %v after %d requests; want io.EOF after 2", err, s.count())
	}
}

// gRFC A6, "Hedging Policy": without retryThrottling no throttling
// applies, so a converted hedgingPolicy sends every hedge maxAttempts
// allows, hedgingDelay apart, even from a client that has never sent a
// request; a hedgingDelay of "0s", or none, sends them all at once.
func TestA6HedgingWithoutThrottling(t *testing.T) {
	for _, tc := range []struct {
		name, delay string
		wantBy      time.Duration // all three requests sent by then
	}{
		{"hedgingDelay 20ms", `,"hedgingDelay":"0.02s"`, 40 * time.Millisecond},
		{"hedgingDelay 0s", `,"hedgingDelay":"0s"`, 0},
		{"hedgingDelay absent", ``, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg, err := unherdgrpc.ParseMethodConfig([]byte(`{"hedgingPolicy":{"maxAttempts":3`+tc.delay+`}}`), nil)
				if err != nil {
					t.Fatal(err)
				}
				s := &hedgeServer{primary: fault{untilDone: true}, hedged: fault{untilDone: true}}
				c := newClient(t, cfg)
				cc := serve(t, s, false, nil, c.DialOptions()...)
				start := time.Now()
				sent := make(chan time.Duration, 1)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				go func() {
					for s.count() < 3 && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
					sent <- time.Since(start)
				}()
				if _, err := unary(ctx, cc); status.Code(err) != codes.DeadlineExceeded {
					t.Errorf("call ended with %v, want DEADLINE_EXCEEDED (every replica stalls)", err)
				}
				sentBy := <-sent // in the bubble: a deadlock fails the test
				if got := s.count(); got != 3 {
					t.Fatalf("%d requests, want 3 (the primary and 2 hedges)", got)
				}
				if sentBy > tc.wantBy+time.Millisecond {
					t.Errorf("the third request was sent after %v, want by %v", sentBy, tc.wantBy)
				}
			})
		})
	}
}

// timedServer is a hedgeServer that records when each request arrived.
type timedServer struct {
	hedgeServer
	start    time.Time
	mu       sync.Mutex
	arrivals []time.Duration
}

func (s *timedServer) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.mu.Lock()
	s.arrivals = append(s.arrivals, time.Since(s.start))
	s.mu.Unlock()
	return s.hedgeServer.UnaryCall(ctx, req)
}

func (s *timedServer) times() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.arrivals...)
}

// hedgingConfig converts an A6 hedgingPolicy without retryThrottling.
func hedgingConfig(t *testing.T, policy string) unherdgrpc.Config {
	t.Helper()
	cfg, err := unherdgrpc.ParseMethodConfig([]byte(`{"hedgingPolicy":`+policy+`}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// gRFC A6, "Hedging Policy": a status not in nonFatalStatusCodes ends the
// call with that status at once and cancels the outstanding requests
// (grpc-java's hedging tests: a fatal status code commits the call).
func TestA6HedgingFatalStatusEndsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &timedServer{hedgeServer: hedgeServer{primary: fault{untilDone: true}, hedged: fault{code: codes.InvalidArgument}}, start: time.Now()}
		c := newClient(t, hedgingConfig(t, `{"maxAttempts":3,"hedgingDelay":"0.1s","nonFatalStatusCodes":["UNAVAILABLE"]}`))
		cc := serve(t, s, false, nil, c.DialOptions()...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := unary(ctx, cc)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("call ended with %v, want the hedge's INVALID_ARGUMENT", err)
		}
		if took := time.Since(start); took > 150*time.Millisecond {
			t.Errorf("call took %v, want it to end when the fatal status arrived (100ms)", took)
		}
		synctest.Wait()
		if got := s.count(); got != 2 {
			t.Errorf("%d requests, want 2 (no hedge after the fatal status)", got)
		}
	})
}

// gRFC A6, "Pushback" for hedging (grpc-java's hedging pushback tests):
// a negative or malformed grpc-retry-pushback-ms stops further hedges; a
// valid one delays the next hedge by that many milliseconds.
func TestA6HedgingPushback(t *testing.T) {
	for _, tc := range []struct {
		name, pushback string
		wantRequests   int
		wantSecond     time.Duration // when the second request arrives
	}{
		{"negative stops hedges", "-1", 1, 0},
		{"malformed stops hedges", "soon", 1, 0},
		{"300 ms delays the next hedge", "300", 2, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &timedServer{hedgeServer: hedgeServer{primary: fault{code: codes.Unavailable, pushback: tc.pushback}}, start: time.Now()}
				c := newClient(t, hedgingConfig(t, `{"maxAttempts":3,"hedgingDelay":"0.1s","nonFatalStatusCodes":["UNAVAILABLE"]}`))
				cc := serve(t, s, false, nil, c.DialOptions()...)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_, err := unary(ctx, cc)
				synctest.Wait()
				times := s.times()
				if len(times) != tc.wantRequests {
					t.Fatalf("%d requests at %v (call: %v), want %d", len(times), times, err, tc.wantRequests)
				}
				if tc.wantRequests == 1 {
					if status.Code(err) != codes.Unavailable {
						t.Errorf("call ended with %v, want the primary's UNAVAILABLE", err)
					}
					return
				}
				if err != nil {
					t.Errorf("call ended with %v, want the hedge's success", err)
				}
				if got := times[1] - times[0]; got != tc.wantSecond {
					t.Errorf("second request %v after the first, want %v", got, tc.wantSecond)
				}
			})
		})
	}
}

// topDraw is a random source whose every draw is the largest, so that
// full jitter waits the whole ceiling.
type topDraw struct{}

func (topDraw) Uint64() uint64 { return ^uint64(0) }

// gRFC A6, "Exponential Backoff": the n-th retry waits
// random(0, min(initialBackoff*backoffMultiplier^(n-1), maxBackoff)), for
// any positive backoffMultiplier. With every draw at the top of its range
// the retries of a policy with multiplier 1.5 arrive 100, 150 and 200 ms
// apart (the third ceiling, 225 ms, capped at maxBackoff 0.2s).
func TestA6ExponentialBackoffMultiplier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := unherdgrpc.ParseMethodConfig([]byte(`{"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s",
			"maxBackoff":"0.2s","backoffMultiplier":1.5,"retryableStatusCodes":["UNAVAILABLE"]}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Retry.Rand = topDraw{}
		s := &timedServer{hedgeServer: hedgeServer{primary: fault{code: codes.Unavailable}, hedged: fault{code: codes.Unavailable}}, start: time.Now()}
		cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := unary(ctx, cc); status.Code(err) != codes.Unavailable {
			t.Fatalf("call ended with %v, want UNAVAILABLE after 4 attempts", err)
		}
		times := s.times()
		want := []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond, 450 * time.Millisecond}
		if len(times) != len(want) {
			t.Fatalf("requests at %v, want at %v", times, want)
		}
		for i := range want {
			if times[i]-times[0] != want[i] {
				t.Fatalf("requests at %v, want at %v (from the first)", times, want)
			}
		}
	})
}

// gRFC A6, "Hedging Policy" and "Throttling Retry Attempts and Hedged
// RPCs": only maxAttempts, hedgingDelay and the throttle decide whether a
// hedge is sent. A converted hedgingPolicy with retryThrottling keeps
// hedging however often the primary wins (unherd's own hedger suspends
// hedges that keep losing; A6 has no such rule).
func TestA6HedgingNotSuspendedWhenHedgesLose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := unherdgrpc.ParseMethodConfig([]byte(`{"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"0.1s","nonFatalStatusCodes":["UNAVAILABLE"]}}`),
			[]byte(`{"maxTokens":10,"tokenRatio":0.1}`))
		if err != nil {
			t.Fatal(err)
		}
		s := &hedgeServer{primary: fault{stall: 150 * time.Millisecond}, hedged: fault{stall: 200 * time.Millisecond}}
		cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
		const calls = 150
		for i := range calls {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := unary(ctx, cc)
			cancel()
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		synctest.Wait()
		if got := s.count(); got != 2*calls {
			t.Errorf("%d requests for %d calls, want %d: a hedge for every call", got, calls, 2*calls)
		}
	})
}

// recvAll reads a server stream to its end and returns the messages
// received and the error that ended it (nil for a clean end).
func recvAll(stream interface {
	Recv() (*testpb.StreamingOutputCallResponse, error)
}) (int, error) {
	n := 0
	for {
		_, err := stream.Recv()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func outputRequest(n int) *testpb.StreamingOutputCallRequest {
	return &testpb.StreamingOutputCallRequest{ResponseParameters: make([]*testpb.ResponseParameters, n)}
}

func TestServerStreamRetriedBeforeFirstMessage(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "bufconn", true: "tcp"}[tcp], func(t *testing.T) {
			s := &faultServer{plan: []fault{{code: codes.Unavailable}, {code: codes.ResourceExhausted, pushback: "1"}}}
			cc := serve(t, s, tcp, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
			stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(context.Background(), outputRequest(4))
			if err != nil {
				t.Fatal(err)
			}
			n, err := recvAll(stream)
			if err != nil || n != 4 {
				t.Fatalf("received %d messages, err %v; want 4, nil", n, err)
			}
			if s.count() != 3 || first(s.md(2).Get(unherdgrpc.PreviousAttemptsKey)) != "2" {
				t.Fatalf("server saw %d requests, the last with previous attempts %v; want 3 and 2", s.count(), s.md(s.count()-1).Get(unherdgrpc.PreviousAttemptsKey))
			}
		})
	}
}

func TestServerStreamCommittedAtFirstMessage(t *testing.T) {
	s := &faultServer{plan: []fault{{code: codes.Unavailable, sendFirst: 1}}}
	cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
	stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(context.Background(), outputRequest(4))
	if err != nil {
		t.Fatal(err)
	}
	n, err := recvAll(stream)
	if n != 1 || status.Code(err) != codes.Unavailable {
		t.Fatalf("received %d messages, err %v; want 1 and UNAVAILABLE", n, err)
	}
	if s.count() != 1 {
		t.Fatalf("server saw %d requests, want 1: a committed stream is not retried", s.count())
	}
}

func TestServerStreamPermanent(t *testing.T) {
	s := &faultServer{plan: []fault{{code: codes.NotFound}}}
	cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
	stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(context.Background(), outputRequest(2))
	if err != nil {
		t.Fatal(err)
	}
	_, err = recvAll(stream)
	if status.Code(err) != codes.NotFound || !errors.Is(err, retry.ErrPermanent) || s.count() != 1 {
		t.Fatalf("err %v after %d requests; want NOT_FOUND, permanent, 1", err, s.count())
	}
}

func TestServerStreamAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := unherdgrpc.Config{}
		cfg.Retry.AttemptTimeout = 50 * time.Millisecond
		streamAfterTimeout(t, cfg)
	})
}

// streamAfterTimeout makes a server stream of 3 messages under cfg whose
// first attempt the server answers only when its context ends, and
// checks that the second attempt delivers the 3.
func streamAfterTimeout(t *testing.T, cfg unherdgrpc.Config) {
	t.Helper()
	s := &faultServer{plan: []fault{{untilDone: true}}}
	cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
	stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(context.Background(), outputRequest(3))
	if err != nil {
		t.Fatal(err)
	}
	n, err := recvAll(stream)
	if err != nil || n != 3 || s.count() != 2 {
		t.Fatalf("received %d, err %v, %d requests; want 3, nil, 2", n, err, s.count())
	}
}

// sendAll sends n messages on a client stream and closes it.
func sendAll(t *testing.T, stream interface {
	Send(*testpb.StreamingInputCallRequest) error
	CloseAndRecv() (*testpb.StreamingInputCallResponse, error)
}, n int) (*testpb.StreamingInputCallResponse, error) {
	t.Helper()
	for range n {
		if err := stream.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte("abcd")}}); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	return stream.CloseAndRecv()
}

func TestClientStreamReplaysBufferedMessages(t *testing.T) {
	s := &faultServer{plan: []fault{{code: codes.Unavailable}}}
	cc := serve(t, s, false, nil, newClient(t, unherdgrpc.Config{}).DialOptions()...)
	stream, err := testpb.NewTestServiceClient(cc).StreamingInputCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sendAll(t, stream, 3)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetAggregatedPayloadSize() != 12 {
		t.Errorf("aggregated size %d, want 12", resp.GetAggregatedPayloadSize())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.received) != 2 || s.received[0] != 3 || s.received[1] != 3 {
		t.Fatalf("messages received per request %v, want [3 3]: the retry sends them all again", s.received)
	}
}

func TestClientStreamBufferLimitCommits(t *testing.T) {
	tests := []struct {
		name string
		cfg  unherdgrpc.Config
	}{
		{"messages", unherdgrpc.Config{MaxBufferedMessages: 2}},
		{"bytes", unherdgrpc.Config{MaxBufferedBytes: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &faultServer{plan: []fault{{code: codes.Unavailable}}}
			cc := serve(t, s, false, nil, newClient(t, tt.cfg).DialOptions()...)
			stream, err := testpb.NewTestServiceClient(cc).StreamingInputCall(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, err = sendAll(t, stream, 3)
			if status.Code(err) != codes.Unavailable || s.count() != 1 {
				t.Fatalf("err %v after %d requests; want UNAVAILABLE after 1: more than the buffer holds is never retried", err, s.count())
			}
		})
	}
}

// timeoutRecorder is a timeout.Source with a fixed timeout that
// records the samples it is told.
type timeoutRecorder struct {
	timeout time.Duration

	mu      sync.Mutex
	samples []timeoutSample
}

type timeoutSample struct {
	latency time.Duration
	ok      bool
}

func (r *timeoutRecorder) AttemptTimeout() time.Duration { return r.timeout }

func (r *timeoutRecorder) Observe(latency time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, timeoutSample{latency, ok})
}

// TestServerStreamObservesTimeoutSource: a stream's attempts report their
// latency and outcome to Config.Retry.Timeouts, as unary calls' do: the
// attempt its timeout ended as a failure at the timeout, the one that
// answered as a success.
func TestServerStreamObservesTimeoutSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &timeoutRecorder{timeout: 50 * time.Millisecond}
		cfg := unherdgrpc.Config{}
		cfg.Retry.Timeouts = rec
		streamAfterTimeout(t, cfg)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.samples) != 2 || rec.samples[0].ok || rec.samples[0].latency < rec.timeout || !rec.samples[1].ok {
			t.Fatalf("TimeoutSource samples %+v; want a failure after at least %v, then a success", rec.samples, rec.timeout)
		}
	})
}

// The server's delay comes in A6's pushback trailer or in a
// google.rpc.RetryInfo detail (Google APIs, OpenTelemetry's exporters),
// or both. The rule, row by row: either alone is a floor under the
// retry's delay; with both, the longer; a pushback that asks not to retry
// stops the call whatever RetryInfo says; a RetryInfo with an invalid or
// negative delay is ignored. The delay of the one retry is at least the
// floor and at most 10% more (ServerJitter).
func TestUnaryRetryInfo(t *testing.T) {
	ms := func(n int64) *durationpb.Duration { return durationpb.New(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name      string
		pushback  string
		retryInfo *durationpb.Duration
		requests  int
		floor     time.Duration
	}{
		{"RetryInfo alone is a floor", "", ms(40), 2, 40 * time.Millisecond},
		{"pushback alone is a floor", "40", nil, 2, 40 * time.Millisecond},
		{"both: the longer, RetryInfo", "20", ms(60), 2, 60 * time.Millisecond},
		{"both: the longer, pushback", "60", ms(20), 2, 60 * time.Millisecond},
		{"a pushback that stops wins over RetryInfo", "-1", ms(20), 1, 0},
		{"RetryInfo of zero retries on the schedule", "", ms(0), 2, 0},
		{"a negative RetryInfo is ignored", "", durationpb.New(-time.Second), 2, 0},
		{"an invalid RetryInfo is ignored", "", &durationpb.Duration{Seconds: 1, Nanos: -5}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := retryFloor(t, fault{code: codes.Unavailable, pushback: tt.pushback, retryInfo: tt.retryInfo}, tt.requests, tt.floor)
			if tt.requests == 1 {
				if !errors.Is(err, retry.ErrFinal) {
					t.Errorf("err = %v, want ErrFinal", err)
				}
				return
			}
			t.Logf("pushback %q, RetryInfo %v: %d requests, retry after %v", tt.pushback, tt.retryInfo.AsDuration(), tt.requests, d)
		})
	}
}

// A refusal by the server's limiter carries its pushback both ways: the
// trailer and a RetryInfo detail of the same delay.
func TestServerRefusalCarriesRetryInfo(t *testing.T) {
	l, err := limit.New(limit.Config{Algorithm: limit.Fixed(1), MaxWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := unherdgrpc.NewServer(unherdgrpc.ServerConfig{Limiter: l, LimitPushback: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hold, _ := l.Acquire(time.Now()) // the one slot
	defer hold.Ignore()
	s := &faultServer{}
	cc := serve(t, s, false, srv.ServerOptions())
	var tr metadata.MD
	_, err = testpb.NewTestServiceClient(cc).UnaryCall(context.Background(), &testpb.SimpleRequest{}, grpc.Trailer(&tr))
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("code %v, want RESOURCE_EXHAUSTED", st.Code())
	}
	var info *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			info = ri
		}
	}
	if got := tr.Get(unherdgrpc.PushbackKey); len(got) != 1 || got[0] != "1500" {
		t.Errorf("pushback trailer %v, want [1500]", got)
	}
	if info == nil || info.GetRetryDelay().AsDuration() != 1500*time.Millisecond {
		t.Errorf("RetryInfo %v, want a delay of 1.5s", info)
	}
}
