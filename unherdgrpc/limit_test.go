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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/shedtest"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/limit/limittest"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/unherdgrpc"
)

// blockServer holds every unary call until unblock is closed, after
// saying on started that it runs.
type blockServer struct {
	testpb.UnimplementedTestServiceServer
	started chan struct{}
	unblock chan struct{}
}

func (s *blockServer) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.started <- struct{}{}
	select {
	case <-s.unblock:
		return &testpb.SimpleResponse{}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func (s *blockServer) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	return stream.Send(&testpb.StreamingOutputCallResponse{})
}

func TestLimiterRefusesOverLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := shedtest.NoQueue(t, limit.Fixed(2))
		s := &blockServer{started: make(chan struct{}, 3), unblock: make(chan struct{})}
		cc := serve(t, s, false, newServer(t, unherdgrpc.ServerConfig{Limiter: l}).ServerOptions())
		errs := make(chan error, 2)
		for range 2 {
			go func() { _, err := unary(context.Background(), cc); errs <- err }()
		}
		await.Recv(t, s.started, "the first slow call to start")
		await.Recv(t, s.started, "the second slow call to start")

		var trailer metadata.MD
		_, err := testpb.NewTestServiceClient(cc).UnaryCall(context.Background(), &testpb.SimpleRequest{}, grpc.Trailer(&trailer))
		if status.Code(err) != codes.ResourceExhausted || first(trailer.Get(unherdgrpc.PushbackKey)) != "1000" {
			t.Errorf("third call: %v, pushback %q; want RESOURCE_EXHAUSTED, 1000", err, trailer.Get(unherdgrpc.PushbackKey))
		}
		stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(context.Background(), outputRequest(0))
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("a stream over the limit: %v, want RESOURCE_EXHAUSTED", err)
		}
		if got := l.InFlight(); got != 2 {
			t.Errorf("in flight during the slow calls: %d, want 2", got)
		}
		close(s.unblock)
		for range 2 {
			if err := await.Recv(t, errs, "a slow call's result"); err != nil {
				t.Errorf("slow call: %v", err)
			}
		}
		if len(s.started) != 0 {
			t.Error("the refused call ran the handler")
		}
		if got := l.InFlight(); got != 0 {
			t.Errorf("in flight after all calls: %d, want 0", got)
		}
	})
}

func TestLimiterRefusalRetriedAfterPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := shedtest.Full(t)
		srv := newServer(t, unherdgrpc.ServerConfig{Limiter: l, LimitPushback: 250 * time.Millisecond})
		var events []observe.Event
		cfg := unherdgrpc.Config{}
		cfg.Retry.Observer = observe.On(observe.Retry, func(ev observe.Event) {
			events = append(events, ev)
			held.Served(time.Now()) // room for the retry
		})
		fs := &faultServer{}
		cc := serve(t, fs, false, srv.ServerOptions(), newClient(t, cfg).DialOptions()...)
		start := time.Now()
		if _, err := unary(context.Background(), cc); err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || events[0].Class != failure.Throttled || events[0].Delay < 250*time.Millisecond {
			t.Fatalf("retries %+v; want one throttled retry after at least 250 ms", events)
		}
		if took := time.Since(start); took < 250*time.Millisecond || fs.count() != 1 {
			t.Errorf("call took %v, handler ran %d times; want at least the pushback, once", took, fs.count())
		}
		if got := l.InFlight(); got != 0 {
			t.Errorf("in flight after the call: %d, want 0", got)
		}
	})
}

// TestLimiterRelease calls the unary interceptor directly, to see how
// each end of a call is released to the limiter.
func TestLimiterRelease(t *testing.T) {
	tests := []struct {
		name       string
		ctx        func(context.Context) (context.Context, context.CancelFunc)
		handler    func(ctx context.Context) error
		wantCode   codes.Code
		wantRan    bool
		wantSample string // "served", "dropped" or "" for none (Ignore)
	}{
		{name: "reply", handler: func(context.Context) error { return nil }, wantRan: true, wantSample: "served"},
		{name: "other status", handler: func(context.Context) error { return status.Error(codes.NotFound, "") }, wantCode: codes.NotFound, wantRan: true, wantSample: "served"},
		{name: "DEADLINE_EXCEEDED", handler: func(context.Context) error { return status.Error(codes.DeadlineExceeded, "") }, wantCode: codes.DeadlineExceeded, wantRan: true, wantSample: "dropped"},
		{name: "deadline passed", ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 50*time.Millisecond)
		}, handler: func(ctx context.Context) error { <-ctx.Done(); return nil }, wantRan: true, wantSample: "dropped"},
		{name: "CANCELLED", handler: func(context.Context) error { return status.Error(codes.Canceled, "") }, wantCode: codes.Canceled, wantRan: true},
		{name: "client cancelled", ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(10*time.Millisecond, cancel)
			return ctx, cancel
		}, handler: func(ctx context.Context) error { <-ctx.Done(); return status.FromContextError(ctx.Err()).Err() }, wantCode: codes.Canceled, wantRan: true},
		{name: "caller gone before", ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 0)
		}, wantCode: codes.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				alg := &limittest.Recorder{N: 10}
				l := shedtest.NoQueue(t, alg)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tt.ctx != nil {
					ctx, cancel = tt.ctx(ctx)
				}
				defer cancel()
				ran := false
				_, err := newServer(t, unherdgrpc.ServerConfig{Limiter: l}).UnaryServerInterceptor()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/s/m"}, func(ctx context.Context, _ any) (any, error) {
					ran = true
					return nil, tt.handler(ctx)
				})
				if status.Code(err) != tt.wantCode || ran != tt.wantRan {
					t.Errorf("%v, ran %v; want %v, %v", err, ran, tt.wantCode, tt.wantRan)
				}
				shedtest.Released(t, l, alg, tt.wantSample)
			})
		})
	}
}

func TestLimiterPanicReleases(t *testing.T) {
	alg := &limittest.Recorder{N: 1}
	l := shedtest.NoQueue(t, alg)
	srv := newServer(t, unherdgrpc.ServerConfig{Limiter: l})
	boom := errors.New("handler fails")
	func() {
		defer func() {
			if r := recover(); r != boom {
				t.Errorf("recovered %v, want the handler's panic", r)
			}
		}()
		_, _ = srv.UnaryServerInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/s/m"}, func(context.Context, any) (any, error) {
			panic(boom)
		})
		t.Error("the panic did not go on")
	}()
	shedtest.Released(t, l, alg, "") // Ignore
}

func TestLimitPushbackNegative(t *testing.T) {
	_, err := unherdgrpc.NewServer(unherdgrpc.ServerConfig{LimitPushback: -time.Second})
	if !errors.Is(err, unherdgrpc.ErrInvalidConfig) {
		t.Fatalf("NewServer: %v, want ErrInvalidConfig", err)
	}
}

// Lower priorities, named by the PriorityKey header, are refused first,
// and the share kept for critical calls admits one when normal calls are
// refused.
func TestLimiterPriorities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limit.New(limit.Config{Algorithm: limit.Fixed(4), CriticalShare: 0.25})
		if err != nil {
			t.Fatal(err)
		}
		s := &blockServer{started: make(chan struct{}, 4), unblock: make(chan struct{})}
		cc := serve(t, s, false, newServer(t, unherdgrpc.ServerConfig{Limiter: l}).ServerOptions())
		with := func(p string) context.Context {
			return metadata.AppendToOutgoingContext(context.Background(), unherdgrpc.PriorityKey, p)
		}
		errs := make(chan error, 4)
		// One critical call (the reserve applies from the first one on)
		// and two normal ones: 3 of 4 in flight.
		for _, p := range []string{"critical", "normal", "normal"} {
			go func() { _, err := unary(with(p), cc); errs <- err }()
			await.Recv(t, s.started, "a "+p+" call to start")
		}
		for _, p := range []string{"normal", "sheddable"} {
			if _, err := unary(with(p), cc); status.Code(err) != codes.ResourceExhausted {
				t.Errorf("a %s call over the normal share: %v, want RESOURCE_EXHAUSTED", p, err)
			}
		}
		go func() { _, err := unary(with("critical"), cc); errs <- err }()
		await.Recv(t, s.started, "the critical call admitted into the reserve to start")
		close(s.unblock)
		for range 4 {
			if err := await.Recv(t, errs, "an admitted call's result"); err != nil {
				t.Errorf("admitted call: %v", err)
			}
		}
		if got := l.InFlight(); got != 0 {
			t.Errorf("in flight after all calls: %d, want 0", got)
		}
	})
}

// grpc-go's own retries (a service config retryPolicy listing
// RESOURCE_EXHAUSTED, no unherd client) retry a refusal of the limiter
// after its pushback, as gRFC A6 has them honour it.
func TestLimiterRefusalRetriedByGRPCGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := shedtest.Full(t)
		time.AfterFunc(100*time.Millisecond, func() { held.Served(time.Now()) })
		srv := newServer(t, unherdgrpc.ServerConfig{Limiter: l, LimitPushback: 250 * time.Millisecond})
		fs := &faultServer{}
		cc := serve(t, fs, false, srv.ServerOptions(), grpc.WithDefaultServiceConfig(`{"methodConfig":[{"name":[{"service":"grpc.testing.TestService"}],
			"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.001s","maxBackoff":"0.001s","backoffMultiplier":1,"retryableStatusCodes":["RESOURCE_EXHAUSTED"]}}]}`))
		start := time.Now()
		if _, err := unary(context.Background(), cc); err != nil {
			t.Fatalf("call: %v, want grpc-go's retry to succeed after the pushback", err)
		}
		if took := time.Since(start); took < 250*time.Millisecond || fs.count() != 1 {
			t.Errorf("call took %v, handler ran %d times; want at least the 250 ms pushback, once", took, fs.count())
		}
	})
}
