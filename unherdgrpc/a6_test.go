package unherdgrpc_test

// Conformance with gRFC A6, "gRPC Retry Design"
// (https://github.com/grpc/proposal/blob/master/A6-client-retries.md):
// scenarios ported from the proposal's text, from grpc-go's
// test/retry_test.go and from grpc-java's hedging tests
// (RetriableStreamTest), each test named after its source, run against a
// real gRPC server on loopback TCP. Where unherd departs from a source on
// purpose, the test asserts unherd's documented rule and says why.

import (
	"context"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/unherdgrpc"
)

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
	if st.stall > 0 {
		t := time.NewTimer(st.stall)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			s.mu.Lock()
			s.cancelled++
			s.mu.Unlock()
			return status.FromContextError(ctx.Err()).Err()
		}
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
