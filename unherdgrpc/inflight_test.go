package unherdgrpc_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdgrpc"
)

// slowCharge is a handler that takes 300 ms whatever its caller does (the
// work goes on after the caller's attempt has gone, as in most real
// handlers) and answers with the number of its run.
type slowCharge struct {
	testpb.UnimplementedTestServiceServer
	runs atomic.Int32
}

func (s *slowCharge) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	n := s.runs.Add(1)
	time.Sleep(300 * time.Millisecond)
	return &testpb.SimpleResponse{ServerId: "run " + string(rune('0'+n))}, nil
}

// oneExecution serves slowCharge behind the idempotency interceptor
// configured by icfg, calls it once with a key through a client built
// from ccfg, and checks that the call ends with the one execution's
// reply.
func oneExecution(t *testing.T, icfg unherdgrpc.IdempotencyConfig, ccfg unherdgrpc.Config) {
	t.Helper()
	s := &slowCharge{}
	srv := newServer(t, unherdgrpc.ServerConfig{Idempotency: &icfg})
	c := newClient(t, ccfg)
	cc := serve(t, s, false, srv.ServerOptions(), c.DialOptions()...)
	ctx := metadata.AppendToOutgoingContext(context.Background(), unherdgrpc.IdempotencyKey, "charge-1")
	resp, err := unary(ctx, cc)
	if err != nil {
		t.Fatalf("call: %v after %d runs; want the one execution's reply", err, s.runs.Load())
	}
	if resp.GetServerId() != "run 1" || s.runs.Load() != 1 {
		t.Errorf("reply %q after %d runs, want %q from one run", resp.GetServerId(), s.runs.Load(), "run 1")
	}
}

// A retry whose first attempt timed out reaches the call still running:
// it waits for it and gets its reply, instead of ABORTED (which the
// client treats as permanent).
func TestIdempotencyRetryReachesCallInFlight(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		synctest.Test(t, func(t *testing.T) {
			oneExecution(t, unherdgrpc.IdempotencyConfig{}, unherdgrpc.Config{Retry: retry.Config{
				AttemptTimeout: 100 * time.Millisecond,
				Backoff:        backoff.Schedule{Base: backoff.DefaultBase}, // the default schedule, not the tests' immediate one
				Rand:           rand.NewPCG(seed, seed),
			}})
		})
	}
}

// A hedge of unherd's own hedger reaches the call still running: both
// get the one execution's reply.
func TestIdempotencyHedgeReachesCallInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		oneExecution(t, unherdgrpc.IdempotencyConfig{}, unherdgrpc.Config{Hedge: newHedger(t, 50*time.Millisecond)})
	})
}

// A converted A6 hedging policy that does not list the status a
// duplicate in flight used to get (ABORTED) gets the one execution's
// reply.
func TestIdempotencyA6HedgingReachesCallInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := unherdgrpc.ParseMethodConfig([]byte(`{"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0.05s","nonFatalStatusCodes":["UNAVAILABLE"]}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		oneExecution(t, unherdgrpc.IdempotencyConfig{}, cfg)
	})
}

// A call still waiting when the server's Wait ends is answered
// UNAVAILABLE with pushback, which unherd's client retries after the
// pushback; the retry gets the one execution's reply.
func TestIdempotencyPastWaitPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slowCharge{}
		srv := newServer(t, unherdgrpc.ServerConfig{Idempotency: &unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Wait: 20 * time.Millisecond}}})
		var mu sync.Mutex
		var delays []time.Duration
		c := newClient(t, unherdgrpc.Config{Retry: retry.Config{Observer: observe.On(observe.Retry, func(e observe.Event) {
			mu.Lock()
			delays = append(delays, e.Delay)
			mu.Unlock()
		})}})
		cc := serve(t, s, false, srv.ServerOptions(), c.DialOptions()...)
		ctx := metadata.AppendToOutgoingContext(context.Background(), unherdgrpc.IdempotencyKey, "charge-1")

		// Without unherd's client: the status and the pushback as sent.
		plain := serve(t, s, false, srv.ServerOptions())
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = unary(ctx, plain) })
		time.Sleep(10 * time.Millisecond)
		var tr metadata.MD
		_, err := testpb.NewTestServiceClient(plain).UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hi")}}, grpc.Trailer(&tr))
		if status.Code(err) != codes.Unavailable || first(tr.Get(unherdgrpc.PushbackKey)) != "1000" {
			t.Errorf("duplicate past the wait: %v, pushback %q; want UNAVAILABLE with pushback 1000", err, tr.Get(unherdgrpc.PushbackKey))
		}
		wg.Wait()

		// With it: retried after the pushback, and answered.
		ctx2 := metadata.AppendToOutgoingContext(context.Background(), unherdgrpc.IdempotencyKey, "charge-2")
		wg.Go(func() { _, _ = unary(ctx2, cc) })
		time.Sleep(10 * time.Millisecond)
		resp, err := unary(ctx2, cc)
		wg.Wait()
		if err != nil || resp.GetServerId() != "run 2" || s.runs.Load() != 2 {
			t.Fatalf("duplicate through unherd's client: %v %v after %d runs; want the reply of run 2", resp, err, s.runs.Load())
		}
		mu.Lock()
		defer mu.Unlock()
		if len(delays) != 1 || delays[0] < idempotency.InFlightRetryAfter {
			t.Errorf("retries waited %v, want one retry after at least the pushback (%v)", delays, idempotency.InFlightRetryAfter)
		}
	})
}
