package unherdgrpc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/hedgetest"
	"github.com/unherd/unherd/unherdgrpc"
)

// hedgeServer answers a primary (a request without PreviousAttemptsKey)
// as primary says and a hedge as hedged says, and reports which answered
// in the reply's ServerId.
type hedgeServer struct {
	faultServer
	primary, hedged fault
}

func (s *hedgeServer) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.next(ctx)
	md, _ := metadata.FromIncomingContext(ctx)
	f, id := s.primary, "primary"
	if len(md.Get(unherdgrpc.PreviousAttemptsKey)) != 0 {
		f, id = s.hedged, "hedge"
	}
	if err := f.apply(ctx); err != nil {
		return nil, err
	}
	return &testpb.SimpleResponse{ServerId: id}, nil
}

func newHedger(t *testing.T, delay time.Duration) *hedge.Hedger {
	return hedgetest.Always(t, delay)
}

func TestHedgeWinsOverStalledPrimary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &hedgeServer{primary: fault{untilDone: true}}
		c := newClient(t, unherdgrpc.Config{Hedge: newHedger(t, 10*time.Millisecond)})
		cc := serve(t, s, false, nil, c.DialOptions()...)
		resp, err := unary(context.Background(), cc)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetServerId() != "hedge" || s.count() != 2 {
			t.Fatalf("reply from %q after %d requests, want the hedge's after 2", resp.GetServerId(), s.count())
		}
		if got := first(s.md(1).Get(unherdgrpc.PreviousAttemptsKey)); got != "1" {
			t.Errorf("hedge carried %s %q, want 1", unherdgrpc.PreviousAttemptsKey, got)
		}
	})
}

func TestHedgeFastFailureDoesNotCancelPrimary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &hedgeServer{primary: fault{stall: 60 * time.Millisecond}, hedged: fault{code: codes.Unavailable}}
		cfg := unherdgrpc.Config{Hedge: newHedger(t, 10*time.Millisecond)}
		cfg.Retry.MaxAttempts = 1
		cc := serve(t, s, false, nil, newClient(t, cfg).DialOptions()...)
		resp, err := unary(context.Background(), cc)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetServerId() != "primary" {
			t.Fatalf("reply from %q, want the primary's: a hedge's fast UNAVAILABLE must not settle the call", resp.GetServerId())
		}
	})
}

func TestHedgeAllFailThenRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &hedgeServer{primary: fault{stall: 20 * time.Millisecond, code: codes.Unavailable}, hedged: fault{code: codes.Unavailable}}
		c := newClient(t, unherdgrpc.Config{Hedge: newHedger(t, 5*time.Millisecond)})
		cc := serve(t, s, false, nil, c.DialOptions()...)
		_, err := unary(context.Background(), cc)
		// The first attempt is a primary that fails after 20 ms and a hedge
		// that fails at once; the retries carry PreviousAttemptsKey, so the
		// server fails them at once, before their hedge delay: 2+1+1.
		if status.Code(err) != codes.Unavailable || s.count() != 4 {
			t.Fatalf("err %v after %d requests; want UNAVAILABLE after 4", err, s.count())
		}
		if got := first(s.md(3).Get(unherdgrpc.PreviousAttemptsKey)); got != "3" {
			t.Errorf("last request carried %s %q, want 3", unherdgrpc.PreviousAttemptsKey, got)
		}
	})
}

func TestHedgeMethodFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &hedgeServer{primary: fault{stall: 30 * time.Millisecond}}
		c := newClient(t, unherdgrpc.Config{Hedge: newHedger(t, 5*time.Millisecond), HedgeMethod: func(string) bool { return false }})
		cc := serve(t, s, false, nil, c.DialOptions()...)
		resp, err := unary(context.Background(), cc)
		if err != nil || resp.GetServerId() != "primary" || s.count() != 1 {
			t.Fatalf("reply %v, err %v, %d requests; want the primary's alone", resp, err, s.count())
		}
	})
}

// Scenarios of grpc-java's hedging tests (core/src/test/java/io/grpc/
// internal/RetriableStreamTest.java, the hedging_* cases), ported to a
// client interceptor: each runs a converted A6 hedgingPolicy against a
// real gRPC server (bufconn inside a synctest bubble, so that the hedging
// delays are exact) whose requests follow a script, and is named after
// its source. grpc-java drives substreams by hand with a fake clock and
// 100 s delays; here the delays are 100 ms, and maxAttempts is at most 5,
// A6's limit (grpc-java's test builds its policy with 6, past the
// parser). Where unherd departs from grpc-java on purpose, the test
// asserts unherd's rule and says why.

// javaPolicy is grpc-java's HEDGING_POLICY with a 100 ms hedgingDelay:
// UNAVAILABLE and DATA_LOSS are non-fatal, INTERNAL (and every other
// code) fatal.
const javaPolicy = `{"hedgingPolicy":{"maxAttempts":%s,"hedgingDelay":"0.1s","nonFatalStatusCodes":["UNAVAILABLE","DATA_LOSS"]}}`

// ms is a duration in milliseconds, for scripts.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// forever stalls a request until it is cancelled (or the test's bound).
const forever = 10 * time.Second

// javaHedging converts javaPolicy with maxAttempts (and retryThrottling,
// if any) and returns a client of s over bufconn. Call it in a bubble.
func javaHedging(t *testing.T, s *script, maxAttempts, throttling string) testpb.TestServiceClient {
	t.Helper()
	cfg, err := unherdgrpc.ParseMethodConfig([]byte(fmt.Sprintf(javaPolicy, maxAttempts)), []byte(throttling))
	if err != nil {
		t.Fatal(err)
	}
	return testpb.NewTestServiceClient(serve(t, s, false, nil, newClient(t, cfg).DialOptions()...))
}

// times returns when each request arrived, from the script's start.
func (s *script) times() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.arrivals)
}

func (s *script) cancelledCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// hedgedCall makes one unary call under a 2 s bound and returns its error and
// how long it took.
func hedgedCall(client testpb.TestServiceClient) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{})
	return time.Since(start), err
}

// check compares the arrivals (unless wantArrivals is nil), the call's
// end and error, and how many requests the server saw cancelled, once
// every request has ended.
func check(t *testing.T, s *script, err error, took time.Duration, wantCode codes.Code, wantTook time.Duration, wantArrivals []time.Duration, wantCancelled int) {
	t.Helper()
	if status.Code(err) != wantCode {
		t.Errorf("call ended with %v, want %v", err, wantCode)
	}
	if took != wantTook {
		t.Errorf("call took %v, want %v", took, wantTook)
	}
	time.Sleep(time.Second) // in the bubble: any hedge still to come would be sent
	synctest.Wait()
	if got := s.times(); wantArrivals != nil && !slices.Equal(got, wantArrivals) {
		t.Errorf("requests arrived at %v, want %v", got, wantArrivals)
	}
	if got := s.cancelledCount(); got != wantCancelled {
		t.Errorf("%d requests cancelled, want %d", got, wantCancelled)
	}
}

// hedging_everythingDrained_oneHedgeReceivesNonFatal_oneHedgeReceivesFatalStatus:
// hedges go out one delay apart; one fails with a non-fatal status and
// the call goes on; another fails with a fatal one, which ends the call
// with that status and cancels the requests still open.
//
// Departure: grpc-java sends the fourth request at its scheduled time
// (300 ms); unherd sends it when the non-fatal status arrives (220 ms),
// as A6's "Summary of Retry and Hedging Logic" says: "Retryable/Non-Fatal
// Status Code ... Hedging policy: Immediately send next scheduled hedged
// request, if any".
func TestGrpcJavaHedging_everythingDrained_oneHedgeReceivesNonFatal_oneHedgeReceivesFatalStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(
			step{stall: forever},                         // 1, at 0: cancelled at the end
			step{stall: ms(150), code: codes.Internal},   // 2, at 100: fatal at 250
			step{stall: ms(20), code: codes.Unavailable}, // 3, at 200: non-fatal at 220
			step{stall: forever},                         // 4, at 220: cancelled at the end
		)
		took, err := hedgedCall(javaHedging(t, s, "4", ""))
		check(t, s, err, took, codes.Internal, ms(250), []time.Duration{0, ms(100), ms(200), ms(220)}, 2)
	})
}

// hedging_maxAttempts: no more requests than maxAttempts (A6 caps it at
// 5: a policy of 6 sends 5); one that fails early with a non-fatal
// status does not end the call, nor do the next failures while a request
// is still open; the one that succeeds settles the call.
func TestGrpcJavaHedging_maxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(
			step{stall: ms(450), code: codes.DataLoss},    // 1, at 0
			step{stall: ms(10), code: codes.Unavailable},  // 2, at 100: fails at 110, the next hedge goes at once
			step{stall: ms(390)},                          // 3, at 110: succeeds at 500
			step{stall: ms(250), code: codes.DataLoss},    // 4, at 210
			step{stall: ms(160), code: codes.Unavailable}, // 5, at 310
		)
		took, err := hedgedCall(javaHedging(t, s, "6", ""))
		check(t, s, err, took, codes.OK, ms(500), []time.Duration{0, ms(100), ms(110), ms(210), ms(310)}, 0)
	})
}

// hedging_receiveHeaders: a request whose response headers arrive
// commits the call; the others are cancelled and its status, even a
// non-fatal one, is the call's.
//
// Departure, a limit of a unary interceptor: grpc.Header fills a unary
// call's headers only when the request ends, so unherd commits to the
// request then (250 ms), not when its headers arrive (100 ms) as
// grpc-java's stream listener does; a hedge due in between (200 ms) is
// still sent.
func TestGrpcJavaHedging_receiveHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(
			step{stall: forever}, // 1
			step{header: true, stall: ms(150), code: codes.Unavailable}, // 2, at 100: headers, then a non-fatal status at 250
			step{stall: forever}, // 3, at 200
		)
		took, err := hedgedCall(javaHedging(t, s, "4", ""))
		check(t, s, err, took, codes.Unavailable, ms(250), []time.Duration{0, ms(100), ms(200)}, 2)
	})
}

// hedging_pushback_negative: a negative grpc-retry-pushback-ms stops the
// hedges to come (neither the one a non-fatal status would send at once
// nor the scheduled one is sent); the requests already out go on, and
// one of them may still succeed.
func TestGrpcJavaHedging_pushback_negative(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(
			step{stall: forever}, // 1: cancelled when 3 succeeds
			step{stall: ms(150), code: codes.Unavailable, pushback: []string{"-1"}}, // 2, at 100: at 250
			step{stall: ms(200)}, // 3, at 200: succeeds at 400
		)
		took, err := hedgedCall(javaHedging(t, s, "4", ""))
		check(t, s, err, took, codes.OK, ms(400), []time.Duration{0, ms(100), ms(200)}, 1)
	})
}

// hedging_pushback_positive: a pushback of n ms sends the next hedge n ms
// after it arrives, in place of the scheduled one, and a later pushback
// moves it again; a fatal status then ends the call.
func TestGrpcJavaHedging_pushback_positive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(
			step{stall: ms(120), code: codes.Unavailable, pushback: []string{"101"}}, // 1: at 120, next hedge at 221
			step{stall: ms(130), code: codes.Unavailable, pushback: []string{"99"}},  // 2, at 100: at 230, next hedge at 329
			step{stall: forever},                      // 3, at 221: cancelled
			step{stall: ms(11), code: codes.Internal}, // 4, at 329: fatal at 340
		)
		took, err := hedgedCall(javaHedging(t, s, "4", ""))
		check(t, s, err, took, codes.Internal, ms(340), []time.Duration{0, ms(100), ms(221), ms(329)}, 1)
	})
}

// hedging_cancelled: the caller's cancellation cancels every request
// out, and no hedge follows.
func TestGrpcJavaHedging_cancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(step{stall: forever}, step{stall: forever})
		client := javaHedging(t, s, "4", "")
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(ms(150), cancel)
		start := time.Now()
		_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{})
		check(t, s, err, time.Since(start), codes.Canceled, ms(150), []time.Duration{0, ms(100)}, 2)
	})
}

// hedging_throttledByHedgingStreams: the hedges' own non-fatal failures
// spend the channel's retry throttle, and once it is at or below half, no
// further hedge is sent: the call ends with the last failure.
//
// Departure in the numbers only: grpc-java's test uses maxTokens 4 and a
// ratio of 0.8 and has its two requests fail while no hedge is due. A6
// sends the next hedge at once on a non-fatal status, so with 4 tokens a
// third request would go out while the count is still 3; with maxTokens
// 2 the first failure brings the count to the threshold (1).
func TestGrpcJavaHedging_throttledByHedgingStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(
			step{stall: ms(150), code: codes.Unavailable}, // 1: 2 -> 1 token at 150, no hedge at once
			step{stall: ms(100), code: codes.Unavailable}, // 2, at 100: 1 -> 0 at 200
		)
		took, err := hedgedCall(javaHedging(t, s, "3", `{"maxTokens":2,"tokenRatio":0.8}`))
		check(t, s, err, took, codes.Unavailable, ms(200), []time.Duration{0, ms(100)}, 0)
	})
}

// hedging_throttledByOtherCall: another call on the channel spends the
// throttle while a hedged call waits for its next hedge.
//
// Departure: grpc-java checks the throttle only when one of the call's
// own requests fails, so its test still sends the third request after
// another call's failure brought the count to the threshold. A6 says
// "subsequent hedged RPCs will only be sent if token_count is greater
// than the threshold", and unherd checks the throttle before each hedge:
// the hedge due at 100 ms is not sent. The other call is another method
// on the same channel, converted from one service config: A6 keeps one
// throttle per server name.
func TestGrpcJavaHedging_throttledByOtherCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc, err := unherdgrpc.ParseServiceConfig([]byte(`{"methodConfig": [
			{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
			 "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.1s", "nonFatalStatusCodes": ["UNAVAILABLE"]}},
			{"name": [{"service": "grpc.testing.TestService", "method": "StreamingOutputCall"}], "retryPolicy": ` + retryN("2") + `}],
			"retryThrottling": {"maxTokens": 4, "tokenRatio": 0.8}}`))
		if err != nil {
			t.Fatal(err)
		}
		s := newScript(
			step{stall: ms(300), code: codes.Unavailable}, // the hedged call's primary
			step{code: codes.Unavailable},                 // the other call, at 50: 4 -> 3 tokens, retried
			step{code: codes.Unavailable},                 // its retry: 3 -> 2 tokens
		)
		client := testpb.NewTestServiceClient(serve(t, s, false, nil, sc.DialOptions()...))
		other := make(chan error, 1)
		time.AfterFunc(ms(50), func() {
			stream, err := client.StreamingOutputCall(context.Background(), &testpb.StreamingOutputCallRequest{})
			if err == nil {
				_, err = stream.Recv()
			}
			other <- err
		})
		took, err := hedgedCall(client)
		if err := <-other; status.Code(err) != codes.Unavailable {
			t.Errorf("the other call ended with %v, want UNAVAILABLE", err)
		}
		// The other call's retry waits a jittered 1 ms at most.
		check(t, s, err, took, codes.Unavailable, ms(300), nil, 0)
		if got := s.times(); len(got) != 3 || got[1] != ms(50) || got[2] > ms(51) {
			t.Errorf("requests arrived at %v, want 3: the primary at 0, the other call at 50ms and its retry by 51ms (no hedge)", got)
		}
	})
}
