package unherdgrpc_test

import (
	"context"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/unherdgrpc"
)

// echoServer answers every unary call at once, keeping nothing.
type echoServer struct {
	testpb.UnimplementedTestServiceServer
}

func (echoServer) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{ServerId: "a"}, nil
}

// BenchmarkUnaryInterceptor measures a successful unary call over
// bufconn: with no interceptor (bare), through a Client's interceptors
// with its default Config (unherd), and with grpc-go's own retries
// enabled by a service config retryPolicy instead (grpc-retry).
func BenchmarkUnaryInterceptor(b *testing.B) {
	const sc = `{"methodConfig":[{"name":[{"service":"grpc.testing.TestService"}],
		"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.05s","maxBackoff":"20s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}
		],"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}`
	c, err := unherdgrpc.NewClient(unherdgrpc.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		dopts []grpc.DialOption
	}{
		{"bare", nil},
		{"unherd", c.DialOptions()},
		{"grpc-retry", []grpc.DialOption{grpc.WithDefaultServiceConfig(sc)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cc := serve(b, echoServer{}, false, nil, bc.dopts...)
			client := testpb.NewTestServiceClient(cc)
			req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hello")}}
			ctx := context.Background()
			if _, err := client.UnaryCall(ctx, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.UnaryCall(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stallServer is a replica that stalls a share of its requests, drawn
// from a seeded source.
type stallServer struct {
	testpb.UnimplementedTestServiceServer
	stall    time.Duration
	share    float64
	requests atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
}

func (s *stallServer) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.requests.Add(1)
	s.mu.Lock()
	stall := s.rng.Float64() < s.share
	s.mu.Unlock()
	if stall {
		t := time.NewTimer(s.stall)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &testpb.SimpleResponse{}, nil
}

// BenchmarkHedgedTail measures the latency of unary calls to three
// replicas over loopback TCP, round robin, each of which stalls 3% of its
// requests for 20 ms (independently): unhedged, hedged after a fixed
// 2 ms, and hedged with hedge's defaults (after the p95 of recent
// latencies, within a budget of 10% of requests). Each iteration makes
// 500 calls, after 300 warm-up calls that the adaptive delay learns from;
// it reports the p50, p99 and p99.9 latency and the requests sent per
// call.
func BenchmarkHedgedTail(b *testing.B) {
	const (
		replicas = 3
		calls    = 500
		warmup   = 300
	)
	for _, bc := range []struct {
		name  string
		hedge func() (*hedge.Hedger, error)
	}{
		{"unhedged", nil},
		{"hedged-2ms", func() (*hedge.Hedger, error) { return hedge.New(hedge.Config{Delay: 2 * time.Millisecond}) }},
		{"hedged-default", func() (*hedge.Hedger, error) { return hedge.New(hedge.Config{}) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			servers := make([]*stallServer, replicas)
			addrs := make([]resolver.Address, replicas)
			for i := range servers {
				servers[i] = &stallServer{stall: 20 * time.Millisecond, share: 0.03, rng: rand.New(rand.NewPCG(1, uint64(i)))}
				addrs[i] = resolver.Address{Addr: listen(b, servers[i])}
			}
			cfg := unherdgrpc.Config{}
			if bc.hedge != nil {
				h, err := bc.hedge()
				if err != nil {
					b.Fatal(err)
				}
				cfg.Hedge = h
			}
			c, err := unherdgrpc.NewClient(cfg)
			if err != nil {
				b.Fatal(err)
			}
			r := manual.NewBuilderWithScheme("replicas")
			r.InitialState(resolver.State{Addresses: addrs})
			cc, err := grpc.NewClient("replicas:///tail", append(c.DialOptions(),
				grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))...)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cc.Close() })
			client := testpb.NewTestServiceClient(cc)
			req := &testpb.SimpleRequest{}
			ctx := context.Background()
			for range warmup {
				if _, err := client.UnaryCall(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			var before int64
			for _, s := range servers {
				before += s.requests.Load()
			}
			var lat []time.Duration
			for b.Loop() {
				for range calls {
					start := time.Now()
					if _, err := client.UnaryCall(ctx, req); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
			}
			var sent int64
			for _, s := range servers {
				sent += s.requests.Load()
			}
			slices.Sort(lat)
			q := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(q(0.999), "p99.9-ms")
			b.ReportMetric(float64(sent-before)/float64(len(lat)), "requests/call")
		})
	}
}

// listen serves s on loopback TCP until the benchmark ends and returns
// its address.
func listen(b *testing.B, s testpb.TestServiceServer) string {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	b.Cleanup(func() {
		srv.Stop()
		await.Recv(b, done, "the benchmark's gRPC server to stop serving")
	})
	return lis.Addr().String()
}

// BenchmarkInterceptorOverhead measures the unary interceptor's own cost
// on a successful call, with an invoker that returns at once: what a
// Client adds to every call, without the network's noise.
func BenchmarkInterceptorOverhead(b *testing.B) {
	c, err := unherdgrpc.NewClient(unherdgrpc.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ic := c.UnaryClientInterceptor()
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	req, reply := &testpb.SimpleRequest{}, &testpb.SimpleResponse{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := ic(ctx, "/grpc.testing.TestService/UnaryCall", req, reply, nil, invoker); err != nil {
			b.Fatal(err)
		}
	}
}
