//go:build reliability

package unherdgrpc_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/internal/overload"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/unherdgrpc"
)

// workService is a TestService whose UnaryCall is the overload run's work
// server: it waits for one of a fixed number of workers, as long as it
// takes (gRPC runs each handler in a goroutine of its own, so the queue is
// the worker pool's, and unbounded), and works; it answers UNAVAILABLE
// when its work was cut short.
type workService struct {
	testpb.UnimplementedTestServiceServer
	s *overload.Server
}

func (w workService) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if !w.s.Serve(ctx) {
		return nil, status.Error(codes.Unavailable, "work cut short")
	}
	return &testpb.SimpleResponse{}, nil
}

// overloadRows are the rows of TestOverload: a baseline without
// protection, whose handler does not honour its context, and the same
// handler behind a Server whose Limiter is a limit.Limiter with its
// defaults, priorities from the PriorityKey header the callers set.
var overloadRows = []overload.Row{
	{Name: "none", Start: overGRPC(func(*testing.T) (*unherdgrpc.ServerConfig, func() string) {
		return nil, nil
	})},
	{Name: "unherdgrpc Limiter", Judged: true, Start: overGRPC(func(t *testing.T) (*unherdgrpc.ServerConfig, func() string) {
		l, err := limit.New(limit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return &unherdgrpc.ServerConfig{Limiter: l}, overload.LimiterState(l)
	})},
}

// overGRPC is a row's Start for gRPC: the work server's UnaryCall on a
// loopback TCP listener (not bufconn), behind a Server with the
// configuration cfg returns (no Server, no interceptor at all, for nil),
// and callers through a Client
// with its defaults, the critical ones with PriorityKey "critical". A
// call succeeds with an OK status; its 1 s timeout reaches the server as
// grpc-timeout.
func overGRPC(cfg func(*testing.T) (*unherdgrpc.ServerConfig, func() string)) func(*testing.T, *overload.Server) (overload.Caller, func() string) {
	return func(t *testing.T, s *overload.Server) (overload.Caller, func() string) {
		sc, state := cfg(t)
		var opts []grpc.ServerOption
		if sc != nil {
			srv, err := unherdgrpc.NewServer(*sc)
			if err != nil {
				t.Fatal(err)
			}
			opts = srv.ServerOptions()
		}
		c, err := unherdgrpc.NewClient(unherdgrpc.Config{})
		if err != nil {
			t.Fatal(err)
		}
		client := testpb.NewTestServiceClient(serve(t, workService{s: s}, true, opts, c.DialOptions()...))
		do := func(ctx context.Context, critical bool) bool {
			if critical {
				ctx = metadata.AppendToOutgoingContext(ctx, unherdgrpc.PriorityKey, limit.Critical.String())
			}
			_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{})
			return err == nil
		}
		return do, state
	}
}

// TestOverload runs the overload of package reliability (see its doc)
// over gRPC, with the harness of internal/overload, and checks the
// Limiter row against the goals of the scale (UNHERD_RELIABILITY_OVERLOAD,
// UNHERD_RELIABILITY_SEED).
func TestOverload(t *testing.T) {
	seed, err := overload.Seed()
	if err != nil {
		t.Fatal(err)
	}
	overload.Run(t, overload.ScaleFromEnv(), seed, overloadRows)
}
