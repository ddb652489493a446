package unherdgrpc

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/retry"
)

// ServerConfig configures a [Server]. The zero value marks calls whose
// callers retry (see [Server]), sheds nothing and does no idempotency.
type ServerConfig struct {
	// Retried reports whether the callers of a method retry it even when
	// they send none of the headers the Server looks for (another
	// client library's retries, configured for the method). Nil means
	// the headers alone decide.
	Retried func(fullMethod string) bool

	// Overloaded, if set, is asked before every call. When it reports
	// shed, the call is refused at once with RESOURCE_EXHAUSTED and a
	// grpc-retry-pushback-ms trailer of pushback (rounded up to a
	// millisecond; a negative pushback asks the client not to retry at
	// all), which a Client, and grpc-go's own retries, honour as the
	// least wait before the retry. Nil means no shedding.
	Overloaded func(ctx context.Context, fullMethod string) (pushback time.Duration, shed bool)

	// Idempotency, if set, makes unary calls that carry an idempotency
	// key run once: see [IdempotencyConfig]. Nil means none.
	Idempotency *IdempotencyConfig
}

// Server makes the server interceptors: it marks the context of a call
// whose caller retries with retry.WithOuterRetry, so that the handler's
// own outgoing calls (through a Client, or any retry.Policy) make
// retry.Config.NestedAttempts attempts, one by default, and only the edge
// of a call chain retries, as unherdhttp.Middleware does for HTTP. A
// call is marked when
//
//   - it carries RetriesKey, which a Client sends on every call it may
//     repeat, or PreviousAttemptsKey, which a Client and grpc-go's own
//     retries send on every repeat;
//   - it carries an idempotency key (IdempotencyKey), which makes it safe
//     to repeat;
//   - or ServerConfig.Retried says its method is retried.
//
// Marking says the caller retries the call, not every status: a Client
// retries UNAVAILABLE and RESOURCE_EXHAUSTED by default, so a handler
// whose nested call failed should answer UNAVAILABLE rather than
// INTERNAL, or the failure ends every layer's retries. It is safe for
// concurrent use.
type Server struct {
	retried     func(string) bool
	overloaded  func(context.Context, string) (time.Duration, bool)
	idempotency *idempotent
}

// NewServer validates cfg and returns a Server built from it.
func NewServer(cfg ServerConfig) (*Server, error) {
	s := &Server{retried: cfg.Retried, overloaded: cfg.Overloaded}
	if cfg.Idempotency != nil {
		id, err := newIdempotent(*cfg.Idempotency)
		if err != nil {
			return nil, err
		}
		s.idempotency = id
	}
	return s, nil
}

// ServerOptions returns the options that install the Server's unary and
// stream interceptors.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(s.StreamServerInterceptor()),
	}
}

// UnaryServerInterceptor returns the unary interceptor: shedding,
// marking, then idempotency.
func (s *Server) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := s.shed(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if s.callerRetries(md, info.FullMethod) {
			ctx = retry.WithOuterRetry(ctx)
		}
		if s.idempotency != nil {
			return s.idempotency.serve(ctx, md, req, info, handler)
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor returns the stream interceptor: shedding and
// marking (idempotency keys are for unary calls).
func (s *Server) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		if err := s.shed(ctx, info.FullMethod); err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if s.callerRetries(md, info.FullMethod) {
			ss = &markedStream{ServerStream: ss, ctx: retry.WithOuterRetry(ctx)}
		}
		return handler(srv, ss)
	}
}

type markedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (m *markedStream) Context() context.Context { return m.ctx }

// callerRetries reports whether the caller of a call retries it.
func (s *Server) callerRetries(md metadata.MD, method string) bool {
	if len(md[RetriesKey]) != 0 || len(md[PreviousAttemptsKey]) != 0 || len(md[IdempotencyKey]) != 0 {
		return true
	}
	return s.retried != nil && s.retried(method)
}

// shed refuses a call when Overloaded says so.
func (s *Server) shed(ctx context.Context, method string) error {
	if s.overloaded == nil {
		return nil
	}
	d, shed := s.overloaded(ctx, method)
	if !shed {
		return nil
	}
	_ = grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, pushbackValue(d)))
	return status.Error(codes.ResourceExhausted, "unherdgrpc: server overloaded")
}

// pushbackValue formats d for PushbackKey: whole milliseconds, rounded
// up, or -1 for a negative d.
func pushbackValue(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(int64(ms), 10)
}
