package unherdgrpc_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/pause"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fault is what the fault server does on one request: fail with code
// (OK for none) and pushback trailer, after stalling, or after sending
// sendFirst messages of a stream.
type fault struct {
	code      codes.Code
	pushback  string               // grpc-retry-pushback-ms value, "" for none
	retryInfo *durationpb.Duration // a google.rpc.RetryInfo detail's delay, nil for none
	stall     time.Duration
	untilDone bool // stall until the request's context ends
	sendFirst int  // stream: messages sent before failing
}

// faultServer is a TestService whose answers follow a plan, one fault per
// request in order (OK once the plan runs out), and which records the
// metadata of every request.
type faultServer struct {
	testpb.UnimplementedTestServiceServer
	id string

	mu       sync.Mutex
	plan     []fault
	requests []metadata.MD
	received []int // stream: messages received by each request
}

func (s *faultServer) next(ctx context.Context) fault {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, md)
	if len(s.plan) == 0 {
		return fault{}
	}
	f := s.plan[0]
	s.plan = s.plan[1:]
	return f
}

func (s *faultServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *faultServer) md(i int) metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

// stall waits d (none if d is not positive) or, if ctx ends first,
// returns the status of its end, as a handler that honours its context.
func stall(ctx context.Context, d time.Duration) error {
	if d > 0 && !pause.For(ctx, d) {
		return status.FromContextError(ctx.Err()).Err()
	}
	return nil
}

func (f fault) apply(ctx context.Context) error {
	if f.untilDone {
		// Bounded: a request whose context never ends fails, naming the
		// wait, instead of holding the test until go test's timeout.
		if !await.Within(ctx.Done()) {
			return status.Errorf(codes.Internal, "fault server: waited %v for the request's context to end", await.Timeout)
		}
		return status.FromContextError(ctx.Err()).Err()
	}
	if err := stall(ctx, f.stall); err != nil {
		return err
	}
	if f.code == codes.OK {
		return nil
	}
	if f.pushback != "" {
		_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", f.pushback))
	}
	st := status.New(f.code, "injected "+f.code.String())
	if f.retryInfo != nil {
		var err error
		if st, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: f.retryInfo}); err != nil {
			return status.Errorf(codes.Internal, "adding RetryInfo: %v", err)
		}
	}
	return st.Err()
}

func (s *faultServer) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if err := s.next(ctx).apply(ctx); err != nil {
		return nil, err
	}
	return &testpb.SimpleResponse{ServerId: s.id, Username: string(req.GetPayload().GetBody())}, nil
}

func (s *faultServer) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	f := s.next(stream.Context())
	for range f.sendFirst {
		if err := stream.Send(&testpb.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
	if err := f.apply(stream.Context()); err != nil {
		return err
	}
	for range len(req.GetResponseParameters()) {
		if err := stream.Send(&testpb.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
	return nil
}

func (s *faultServer) StreamingInputCall(stream grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	f := s.next(stream.Context())
	n, size := 0, 0
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		n++
		size += len(m.GetPayload().GetBody())
	}
	s.mu.Lock()
	s.received = append(s.received, n)
	s.mu.Unlock()
	if err := f.apply(stream.Context()); err != nil {
		return err
	}
	return stream.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(size)})
}

// serve starts s on a bufconn listener (or, with tcp, loopback TCP) with
// the server options opts, and returns a client connection dialled with
// dopts; both are closed when the test ends.
func serve(t testing.TB, s testpb.TestServiceServer, tcp bool, opts []grpc.ServerOption, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(srv, s)
	var lis net.Listener
	target := "passthrough:///bufnet"
	dopts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dopts...)
	if tcp {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis, target = l, l.Addr().String()
	} else {
		bl := bufconn.Listen(1 << 20)
		lis = bl
		dopts = append(dopts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return bl.DialContext(ctx) }))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient(target, dopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cc.Close()
		srv.Stop()
		await.Recv(t, done, "the test's gRPC server to stop serving")
	})
	return cc
}
