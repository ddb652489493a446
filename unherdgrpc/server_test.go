package unherdgrpc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdgrpc"
)

// markServer answers whether the call's context carries the outer-retry
// mark, in the reply's Username ("marked" or "").
type markServer struct {
	testpb.UnimplementedTestServiceServer
}

func markOf(ctx context.Context) string {
	if retry.HasOuterRetry(ctx) {
		return "marked"
	}
	return ""
}

func (markServer) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Username: markOf(ctx)}, nil
}

func (markServer) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	return stream.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte(markOf(stream.Context()))}})
}

func newServer(t *testing.T, cfg unherdgrpc.ServerConfig) *unherdgrpc.Server {
	t.Helper()
	s, err := unherdgrpc.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestServerMarksCallersThatRetry(t *testing.T) {
	c := newClient(t, unherdgrpc.Config{})
	tests := []struct {
		name    string
		cfg     unherdgrpc.ServerConfig
		client  []grpc.DialOption
		ctx     func(context.Context) context.Context
		want    string
		wantKey bool
	}{
		{name: "unherd client", client: c.DialOptions(), want: "marked"},
		{name: "unherd client that will not retry (nested)", client: c.DialOptions(), ctx: retry.WithOuterRetry, want: ""},
		{name: "plain client", want: ""},
		{name: "plain client repeating", ctx: func(ctx context.Context) context.Context {
			return metadata.AppendToOutgoingContext(ctx, unherdgrpc.PreviousAttemptsKey, "1")
		}, want: "marked"},
		{name: "plain client with a key", ctx: func(ctx context.Context) context.Context {
			return metadata.AppendToOutgoingContext(ctx, unherdgrpc.IdempotencyKey, "k1")
		}, want: "marked"},
		{name: "method configured as retried", cfg: unherdgrpc.ServerConfig{Retried: func(string) bool { return true }}, want: "marked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.cfg)
			cc := serve(t, markServer{}, false, srv.ServerOptions(), tt.client...)
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx(ctx)
			}
			resp, err := unary(ctx, cc)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetUsername() != tt.want {
				t.Errorf("unary: mark %q, want %q", resp.GetUsername(), tt.want)
			}
			stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(ctx, outputRequest(0))
			if err != nil {
				t.Fatal(err)
			}
			m, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if got := string(m.GetPayload().GetBody()); got != tt.want {
				t.Errorf("stream: mark %q, want %q", got, tt.want)
			}
		})
	}
}

func TestServerPushbackWhenOverloaded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var shed atomic.Int32
		srv := newServer(t, unherdgrpc.ServerConfig{Overloaded: func(context.Context, string) (time.Duration, bool) {
			return 20*time.Millisecond + time.Microsecond, shed.Add(1) == 1
		}})
		var delays []time.Duration
		var classes []retry.Class
		cfg := unherdgrpc.Config{}
		cfg.Retry.OnRetry = func(ev retry.RetryEvent) { delays, classes = append(delays, ev.Delay), append(classes, ev.Class) }
		cc := serve(t, &faultServer{}, false, srv.ServerOptions(), newClient(t, cfg).DialOptions()...)
		if _, err := unary(context.Background(), cc); err != nil {
			t.Fatal(err)
		}
		// 20.001 ms rounds up to 21 ms, a floor with up to 10% on top.
		if len(delays) != 1 || delays[0] < 21*time.Millisecond || delays[0] > 21*time.Millisecond*11/10 || classes[0] != retry.Throttled {
			t.Fatalf("retries %v of classes %v; want one throttled retry after 21 to 23.1 ms", delays, classes)
		}
	})
}

func TestServerPushbackNegativeStopsRetries(t *testing.T) {
	srv := newServer(t, unherdgrpc.ServerConfig{Overloaded: func(context.Context, string) (time.Duration, bool) { return -1, true }})
	fs := &faultServer{}
	cc := serve(t, fs, false, srv.ServerOptions(), newClient(t, unherdgrpc.Config{}).DialOptions()...)
	_, err := unary(context.Background(), cc)
	if status.Code(err) != codes.ResourceExhausted || !errors.Is(err, retry.ErrFinal) || fs.count() != 0 {
		t.Fatalf("err %v, handler ran %d times; want RESOURCE_EXHAUSTED, final, never", err, fs.count())
	}
}
