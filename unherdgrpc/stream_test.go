package unherdgrpc_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdgrpc"
)

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

// timeoutRecorder is a retry.TimeoutSource with a fixed timeout that
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
