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
	"google.golang.org/protobuf/proto"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/idempotency/storetest"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
	"github.com/unherd/unherd/unherdgrpc"
)

// markServer answers whether the call's context carries the outer-retry
// mark, in the reply's Username ("marked" or "").
type markServer struct {
	testpb.UnimplementedTestServiceServer
}

func markOf(ctx context.Context) string {
	if engine.HasOuterRetry(ctx) {
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
	return configtest.Must(unherdgrpc.NewServer(cfg))(t)
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
		var classes []failure.Class
		cfg := unherdgrpc.Config{}
		cfg.Retry.Observer = observe.On(observe.Retry, func(ev observe.Event) { delays, classes = append(delays, ev.Delay), append(classes, ev.Class) })
		cc := serve(t, &faultServer{}, false, srv.ServerOptions(), newClient(t, cfg).DialOptions()...)
		if _, err := unary(context.Background(), cc); err != nil {
			t.Fatal(err)
		}
		// 20.001 ms rounds up to 21 ms, a floor with up to 10% on top.
		if len(delays) != 1 || delays[0] < 21*time.Millisecond || delays[0] > 21*time.Millisecond*11/10 || classes[0] != failure.Throttled {
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

// countServer counts the handler's runs and answers by the request's
// payload: "fail:<code>" fails with that code, anything else succeeds
// with the run number in the reply. block, if set, holds a run until it
// is closed.
type countServer struct {
	testpb.UnimplementedTestServiceServer
	runs    atomic.Int32
	block   chan struct{}
	started chan struct{}
}

func (s *countServer) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	n := s.runs.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	if _, ok := idempotency.LeaseFromContext(ctx); !ok && len(md.Get(unherdgrpc.IdempotencyKey)) != 0 {
		return nil, status.Error(codes.Internal, "no lease in the handler's context")
	}
	if s.block != nil {
		close(s.started)
		if !await.Within(s.block) {
			return nil, status.Errorf(codes.Internal, "countServer: waited %v for the test to unblock the run", await.Timeout)
		}
	}
	switch string(req.GetPayload().GetBody()) {
	case "fail:unavailable":
		return nil, status.Error(codes.Unavailable, "try again")
	case "fail:notfound":
		return nil, status.Error(codes.NotFound, "no such thing")
	}
	return &testpb.SimpleResponse{ServerId: string(rune('0' + n))}, nil
}

func keyed(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), unherdgrpc.IdempotencyKey, key)
}

func call(cc *grpc.ClientConn, ctx context.Context, body string) (*testpb.SimpleResponse, metadata.MD, error) {
	var hdr metadata.MD
	resp, err := testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte(body)}}, grpc.Header(&hdr))
	return resp, hdr, err
}

func idempotentConn(t *testing.T, s *countServer, cfg unherdgrpc.IdempotencyConfig) *grpc.ClientConn {
	t.Helper()
	srv := newServer(t, unherdgrpc.ServerConfig{Idempotency: &cfg})
	return serve(t, s, false, srv.ServerOptions())
}

func TestIdempotencyReplaysCompletedCall(t *testing.T) {
	s := &countServer{}
	cc := idempotentConn(t, s, unherdgrpc.IdempotencyConfig{})
	orig, hdr, err := call(cc, keyed("k1"), "a")
	if err != nil || len(hdr.Get(unherdgrpc.ReplayedKey)) != 0 {
		t.Fatalf("first call: %v, header %v", err, hdr)
	}
	again, hdr, err := call(cc, keyed("k1"), "a")
	if err != nil {
		t.Fatal(err)
	}
	if again.GetServerId() != orig.GetServerId() || s.runs.Load() != 1 || first(hdr.Get(unherdgrpc.ReplayedKey)) != "true" {
		t.Fatalf("replay %v after %v, %d runs, header %v; want the first reply, 1 run, replayed", again, orig, s.runs.Load(), hdr)
	}
	if _, _, err := call(cc, keyed("k1"), "b"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("key reused with another request: %v, want FAILED_PRECONDITION", err)
	}
	if _, _, err := call(cc, context.Background(), "a"); err != nil || s.runs.Load() != 2 {
		t.Fatalf("call without a key: %v, %d runs; want it to run", err, s.runs.Load())
	}
}

func TestIdempotencyStatuses(t *testing.T) {
	s := &countServer{}
	cc := idempotentConn(t, s, unherdgrpc.IdempotencyConfig{})
	// A status a client retries releases the key: the retry runs.
	for range 2 {
		if _, _, err := call(cc, keyed("u"), "fail:unavailable"); status.Code(err) != codes.Unavailable {
			t.Fatalf("err %v, want UNAVAILABLE", err)
		}
	}
	if s.runs.Load() != 2 {
		t.Fatalf("%d runs, want 2: UNAVAILABLE releases the key", s.runs.Load())
	}
	// A permanent status is stored and replayed.
	for range 2 {
		_, _, err := call(cc, keyed("n"), "fail:notfound")
		if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != "no such thing" {
			t.Fatalf("err %v, want the handler's NOT_FOUND", err)
		}
	}
	if s.runs.Load() != 3 {
		t.Fatalf("%d runs, want 3: NOT_FOUND is replayed", s.runs.Load())
	}
}

// A duplicate of a call in flight that does not wait (a negative Wait)
// is asked to come back: UNAVAILABLE with pushback, never a status the
// client treats as final.
func TestIdempotencyInFlight(t *testing.T) {
	s := &countServer{block: make(chan struct{}), started: make(chan struct{})}
	cc := idempotentConn(t, s, unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Wait: -1}})
	firstDone := make(chan error, 1)
	go func() {
		_, _, err := call(cc, keyed("k"), "a")
		firstDone <- err
	}()
	await.Recv(t, s.started, "the first call's handler to start")
	var tr metadata.MD
	_, err := testpb.NewTestServiceClient(cc).UnaryCall(keyed("k"), &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("a")}}, grpc.Trailer(&tr))
	close(s.block)
	firstErr := await.Recv(t, firstDone, "the first call to return once its handler was unblocked")
	if status.Code(err) != codes.Unavailable || first(tr.Get(unherdgrpc.PushbackKey)) != "1000" || firstErr != nil {
		t.Fatalf("duplicate in flight: %v, pushback %v (first: %v); want UNAVAILABLE with pushback 1000", err, tr.Get(unherdgrpc.PushbackKey), firstErr)
	}
}

func TestIdempotencyRequired(t *testing.T) {
	s := &countServer{}
	cc := idempotentConn(t, s, unherdgrpc.IdempotencyConfig{Required: true})
	if _, _, err := call(cc, context.Background(), "a"); status.Code(err) != codes.InvalidArgument || s.runs.Load() != 0 {
		t.Fatalf("err %v after %d runs, want INVALID_ARGUMENT and none", err, s.runs.Load())
	}
	if _, _, err := call(cc, keyed(`"not closed`), "a"); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("malformed key: %v, want INVALID_ARGUMENT", err)
	}
}

// sharedStore is a Memory store as the interceptor sees a shared one
// (unherdredis, unherdpg): claims hold a lease, which bounds the handler.
type sharedStore struct{ *idempotency.Memory }

func TestIdempotencySharedStore(t *testing.T) {
	m, err := idempotency.NewMemory(idempotency.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s := &countServer{}
	cc := idempotentConn(t, s, unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Store: sharedStore{m}}, Principal: func(context.Context) string { return "acct-1" }})
	for range 3 {
		if _, _, err := call(cc, keyed("k"), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if s.runs.Load() != 1 || m.Len() != 1 {
		t.Fatalf("%d runs, %d records; want 1 and 1", s.runs.Load(), m.Len())
	}
}

// countingStore counts Complete calls.
type countingStore struct {
	*idempotency.Memory
	completes atomic.Int32
}

func (s *countingStore) Complete(ctx context.Context, key string, token uint64, r *idempotency.Response, ttl time.Duration) error {
	s.completes.Add(1)
	return s.Memory.Complete(ctx, key, token, r, ttl)
}

// completingServer completes its record itself, as a handler using
// unherdpg's InTx does, and marks the lease.
type completingServer struct {
	testpb.UnimplementedTestServiceServer
	store idempotency.Store
}

func (s *completingServer) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	l, ok := idempotency.LeaseFromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Internal, "no lease")
	}
	reply := &testpb.SimpleResponse{ServerId: "done-in-tx"}
	b, _ := proto.Marshal(reply)
	if err := s.store.Complete(ctx, l.Key, l.Token, &idempotency.Response{Body: b}, l.TTL); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	l.MarkCompleted()
	return reply, nil
}

func TestIdempotencyHandlerCompletes(t *testing.T) {
	m, err := idempotency.NewMemory(idempotency.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Memory: m}
	srv := newServer(t, unherdgrpc.ServerConfig{Idempotency: &unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Store: store}}})
	cc := serve(t, &completingServer{store: store}, false, srv.ServerOptions())
	for range 2 {
		resp, _, err := call(cc, keyed("k"), "a")
		if err != nil || resp.GetServerId() != "done-in-tx" {
			t.Fatalf("reply %v, err %v", resp, err)
		}
	}
	if n := store.completes.Load(); n != 1 {
		t.Fatalf("%d completions, want 1: the handler's own", n)
	}
}

// slowServer holds each call for hold, on the bubble's clock.
type slowServer struct {
	testpb.UnimplementedTestServiceServer
	hold time.Duration
	runs atomic.Int32
}

func (s *slowServer) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.runs.Add(1)
	select {
	case <-time.After(s.hold):
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &testpb.SimpleResponse{ServerId: "slow"}, nil
}

// A shared store's lease is renewed while the handler runs: a handler
// three leases long keeps its key, and a duplicate sent meanwhile waits
// for its reply instead of taking the key over.
func TestIdempotencyLeaseRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := idempotency.NewMemory(idempotency.MemoryConfig{})
		if err != nil {
			t.Fatal(err)
		}
		s := &slowServer{hold: 9 * time.Second}
		srv := newServer(t, unherdgrpc.ServerConfig{Idempotency: &unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Store: sharedStore{m}, Lease: 3 * time.Second}}})
		cc := serve(t, s, false, srv.ServerOptions())
		done := make(chan error, 1)
		go func() {
			_, _, err := call(cc, keyed("k"), "a")
			done <- err
		}()
		time.Sleep(7 * time.Second)
		if resp, _, err := call(cc, keyed("k"), "a"); err != nil || resp.GetServerId() != "slow" || s.runs.Load() != 1 {
			t.Errorf("duplicate after two leases: %v %v after %d runs, want the one run's reply", resp, err, s.runs.Load())
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, hdr, err := call(cc, keyed("k"), "a"); err != nil || first(hdr.Get(unherdgrpc.ReplayedKey)) != "true" || s.runs.Load() != 1 {
			t.Fatalf("after the first completed: %v, header %v, %d runs; want a replay of the one run", err, hdr, s.runs.Load())
		}
	})
}

// A principal-scoped service and an unscoped one share a store: a key
// crafted to spell the scoped service's stored key for alice runs its own
// call instead of replaying hers.
func TestIdempotencyCrossPrincipal(t *testing.T) {
	m, err := idempotency.NewMemory(idempotency.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	user := func(ctx context.Context) string {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("x-user"); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	scoped, open := &countServer{}, &countServer{}
	scopedCC := idempotentConn(t, scoped, unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Store: m}, Principal: user})
	openCC := idempotentConn(t, open, unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Store: m}})
	alice := metadata.AppendToOutgoingContext(keyed("xcc1"), "x-user", "alice")
	if _, _, err := call(scopedCC, alice, "charge"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"5:alicexcc1", "p5:alicexcc1", "alicexcc1", "uxcc1"} {
		_, hdr, err := call(openCC, keyed(key), "charge")
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if len(hdr.Get(unherdgrpc.ReplayedKey)) > 0 {
			t.Errorf("unscoped key %q replayed alice's call", key)
		}
	}
	if n := open.runs.Load(); n != 4 {
		t.Errorf("the unscoped service ran %d calls, want 4", n)
	}
}

// A claim that took effect in the store but timed out on the
// interceptor's side does not hold the key for its 30 s lease: the
// client's retry, moments later, runs, as over HTTP.
func TestIdempotencyAmbiguousClaimReleased(t *testing.T) {
	m, err := idempotency.NewMemory(idempotency.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	store := &signalledReleases{LostAnswers: storetest.LostAnswers{Store: sharedStore{m}}, released: make(chan struct{}, 1)}
	s := &countServer{}
	cc := idempotentConn(t, s, unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Store: store, StoreTimeout: 100 * time.Millisecond, Lease: 30 * time.Second}})
	store.Lose.Store(true)
	if _, _, err := call(cc, keyed("k"), "a"); status.Code(err) != codes.Unavailable {
		t.Fatalf("a claim whose answer was lost: %v, want UNAVAILABLE", err)
	}
	store.Lose.Store(false)
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	select {
	case <-store.released:
	case <-timer.C:
		t.Fatal("waited 5 s for the claim whose answer was lost to be released; want it released at once, not held for its 30 s lease")
	}
	if _, _, err := call(cc, keyed("k"), "a"); err != nil {
		t.Fatalf("the retry after the release: %v; want it to run", err)
	}
	if n := s.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// signalledReleases is a shared store whose claims, while Lose is set,
// take effect but whose answers are lost, and which sends on released
// when a release has landed.
type signalledReleases struct {
	storetest.LostAnswers
	released chan struct{}
}

func (s *signalledReleases) Release(ctx context.Context, key string, token uint64) error {
	err := s.LostAnswers.Release(ctx, key, token)
	if err == nil {
		select {
		case s.released <- struct{}{}:
		default:
		}
	}
	return err
}

// heldReleases is a shared store whose claims, while lose is set, take
// effect but whose answers are lost, and whose releases wait until held
// is closed: a store slow to take the release of a claim whose answer
// was lost, which goes on after the call was answered.
type heldReleases struct {
	storetest.LostAnswers
	held chan struct{}
}

func (s *heldReleases) Release(ctx context.Context, key string, token uint64) error {
	select {
	case <-s.held:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.LostAnswers.Release(ctx, key, token)
}

// Server.Drain waits for the idempotency's background store calls: it
// returns its context's cause while a release is held, and nil once the
// release has landed, after which the key runs again at once.
func TestServerDrain(t *testing.T) {
	if err := newServer(t, unherdgrpc.ServerConfig{}).Drain(context.Background()); err != nil {
		t.Fatalf("Drain without idempotency: %v", err)
	}
	m, err := idempotency.NewMemory(idempotency.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	store := &heldReleases{LostAnswers: storetest.LostAnswers{Store: sharedStore{m}}, held: make(chan struct{})}
	cfg := unherdgrpc.IdempotencyConfig{KeeperConfig: idempotency.KeeperConfig{Store: store, StoreTimeout: 100 * time.Millisecond, Lease: 30 * time.Second}}
	srv := newServer(t, unherdgrpc.ServerConfig{Idempotency: &cfg})
	s := &countServer{}
	cc := serve(t, s, false, srv.ServerOptions())
	store.Lose.Store(true)
	if _, _, err := call(cc, keyed("k"), "a"); status.Code(err) != codes.Unavailable {
		t.Fatalf("a claim whose answer was lost: %v, want UNAVAILABLE", err)
	}
	store.Lose.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Drain while the release is held: %v, want the context's deadline", err)
	}
	close(store.held)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Drain(ctx); err != nil {
		t.Fatalf("Drain once the release is let through: %v (waited 10 s for it)", err)
	}
	if _, _, err := call(cc, keyed("k"), "a"); err != nil || s.runs.Load() != 1 {
		t.Errorf("after Drain: %v after %d runs, want the call to run at once", err, s.runs.Load())
	}
}
