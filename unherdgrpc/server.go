package unherdgrpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/retry"
)

// DefaultLimitPushback is the pushback of a call refused by
// ServerConfig.Limiter when ServerConfig.LimitPushback is zero: one
// second, as unherdhttp.Shed's Retry-After.
const DefaultLimitPushback = time.Second

// ServerConfig configures a [Server]. The zero value marks calls whose
// callers retry (see [Server]), sheds nothing but calls whose caller has
// gone, and does no idempotency.
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

	// Limiter, if set, admits at most its limit of calls, unary and
	// streams, at once; a call over it is refused at once, as Overloaded
	// refuses, with a pushback of LimitPushback. An admitted call is
	// released when its handler returns: Dropped if its context passed
	// its deadline or it ended with DEADLINE_EXCEEDED (the work was too
	// slow: a sign of overload), Ignore if the client cancelled it (its
	// context was cancelled, or it ended with CANCELLED) or the handler
	// panicked, Served otherwise, any other status included. Nil means
	// no limit.
	Limiter *limit.Limiter

	// LimitPushback is the pushback sent with a refusal by Limiter.
	// Zero means DefaultLimitPushback (1 s); it must not be negative.
	LimitPushback time.Duration

	// Priority returns a call's priority for Limiter: Sheddable calls are
	// refused first, and a share of the limit is kept for Critical ones
	// (limit.Config.CriticalShare). A call waits in the Limiter's queue,
	// if it has one (limit.Config.MaxWait), while its deadline lasts. Nil
	// means the value of the request header PriorityKey, which any client
	// may set (Normal when absent or invalid): behind a public edge, set
	// Priority to one that trusts it only from callers it trusts.
	Priority func(ctx context.Context, fullMethod string) limit.Priority

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
	retried       func(string) bool
	overloaded    func(context.Context, string) (time.Duration, bool)
	limiter       *limit.Limiter
	priority      func(context.Context, string) limit.Priority
	limitPushback time.Duration
	idempotency   *idempotent
}

// NewServer validates cfg and returns a Server built from it.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.LimitPushback < 0 {
		return nil, fmt.Errorf("%w: ServerConfig.LimitPushback %v is negative", ErrInvalidConfig, cfg.LimitPushback)
	}
	s := &Server{retried: cfg.Retried, overloaded: cfg.Overloaded, limiter: cfg.Limiter, limitPushback: cfg.LimitPushback, priority: cfg.Priority}
	if s.priority == nil {
		s.priority = metadataPriority
	}
	if s.limitPushback == 0 {
		s.limitPushback = DefaultLimitPushback
	}
	if cfg.Idempotency != nil {
		id, err := newIdempotent(*cfg.Idempotency)
		if err != nil {
			return nil, err
		}
		s.idempotency = id
	}
	return s, nil
}

// Drain waits until the store calls the Server's idempotency runs in the
// background, after the calls that needed them were answered, have
// ended, or until ctx ends, and returns ctx's cause then; see
// idempotency.Keeper.Drain. Call it after grpc.Server.GracefulStop,
// before closing the store. Without ServerConfig.Idempotency it returns
// nil at once.
func (s *Server) Drain(ctx context.Context) error {
	if s.idempotency == nil {
		return nil
	}
	return s.idempotency.k.Drain(ctx)
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
		tok, err := s.shed(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		returned := false
		defer func() {
			if !returned { // the handler panicked
				tok.Ignore()
			}
		}()
		resp, err := s.unary(ctx, req, info, handler)
		returned = true
		release(tok, ctx.Err(), err, limit.Now())
		return resp, err
	}
}

// unary is the unary interceptor after shedding.
func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if s.callerRetries(md, info.FullMethod) {
		ctx = retry.WithOuterRetry(ctx)
	}
	if s.idempotency != nil {
		return s.idempotency.serve(ctx, md, req, info, handler)
	}
	return handler(ctx, req)
}

// StreamServerInterceptor returns the stream interceptor: shedding and
// marking (idempotency keys are for unary calls).
func (s *Server) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		tok, err := s.shed(ctx, info.FullMethod)
		if err != nil {
			return err
		}
		returned := false
		defer func() {
			if !returned { // the handler panicked
				tok.Ignore()
			}
		}()
		md, _ := metadata.FromIncomingContext(ctx)
		if s.callerRetries(md, info.FullMethod) {
			ss = &markedStream{ServerStream: ss, ctx: retry.WithOuterRetry(ctx)}
		}
		err = handler(srv, ss)
		returned = true
		release(tok, ctx.Err(), err, limit.Now())
		return err
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

// shed admits a call, with the limiter's token to release when it ends
// (the zero Token without a limiter), or refuses it: with the status of
// its context if the caller has gone (the deadline grpc-timeout set has
// passed, or the client cancelled), and with RESOURCE_EXHAUSTED and a
// pushback when Overloaded says so or the limiter is full.
func (s *Server) shed(ctx context.Context, method string) (limit.Token, error) {
	if err := ctx.Err(); err != nil {
		return limit.Token{}, status.FromContextError(err).Err()
	}
	if s.overloaded != nil {
		if d, shed := s.overloaded(ctx, method); shed {
			return limit.Token{}, refuse(ctx, d)
		}
	}
	tok, err := s.admit(ctx, method)
	switch {
	case errors.Is(err, limit.ErrLimited):
		return limit.Token{}, refuse(ctx, s.limitPushback)
	case err != nil: // the caller went away while the call waited
		return limit.Token{}, status.FromContextError(ctx.Err()).Err()
	}
	return tok, nil
}

// PriorityKey is the request header of a call's priority for
// ServerConfig.Limiter: limit.PriorityHeader, in gRPC's lower case.
const PriorityKey = "unherd-priority"

// metadataPriority is the priority the call's PriorityKey names, or
// Normal.
func metadataPriority(ctx context.Context, _ string) limit.Priority {
	md, _ := metadata.FromIncomingContext(ctx)
	vs := md.Get(PriorityKey)
	if len(vs) != 1 {
		return limit.Normal
	}
	p, err := limit.ParsePriority(vs[0])
	if err != nil {
		return limit.Normal
	}
	return p
}

// admit asks the limiter for a token for a call of method served under
// ctx, waiting in its queue while ctx lasts. With no limiter, every call
// is admitted with the zero Token, whose release does nothing.
func (s *Server) admit(ctx context.Context, method string) (limit.Token, error) {
	if s.limiter == nil {
		return limit.Token{}, nil
	}
	return s.limiter.Wait(ctx, s.priority(ctx, method))
}

// refuse returns the refusal of an overloaded server, RESOURCE_EXHAUSTED,
// with a pushback of d.
func refuse(ctx context.Context, d time.Duration) error {
	return pushback(ctx, codes.ResourceExhausted, "unherdgrpc: server overloaded", d)
}

// pushback returns a status error of code and msg that asks the client to
// wait d before it retries, in both of the ways clients read: the
// PushbackKey trailer of gRFC A6 and a google.rpc.RetryInfo detail, as
// Google APIs and OpenTelemetry's exporters send it. A negative d, which
// asks the client not to retry, goes in the trailer alone: RetryInfo has
// no way to say it.
func pushback(ctx context.Context, code codes.Code, msg string, d time.Duration) error {
	v := pushbackValue(d)
	_ = grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, v))
	st := status.New(code, msg)
	if d >= 0 {
		ms, _ := strconv.ParseInt(v, 10, 64)
		if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(ms) * time.Millisecond)}); err == nil {
			st = withInfo
		}
	}
	return st.Err()
}

// release tells the limiter how a call ended that returned at now with
// err, its context's error being ctxErr.
func release(tok limit.Token, ctxErr, err error, now time.Time) {
	code := status.Code(err)
	switch {
	case errors.Is(ctxErr, context.DeadlineExceeded), code == codes.DeadlineExceeded:
		tok.Dropped(now)
	case ctxErr != nil, code == codes.Canceled:
		tok.Ignore()
	default:
		tok.Served(now)
	}
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
