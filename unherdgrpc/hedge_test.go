package unherdgrpc_test

import (
	"context"
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
