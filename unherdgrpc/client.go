package unherdgrpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// Defaults applied to zero fields of [Config].
const (
	// DefaultMaxBufferedMessages is how many messages a stream keeps, to
	// send again on a retry, before its response headers arrive.
	DefaultMaxBufferedMessages = 64
	// DefaultMaxBufferedBytes bounds the encoded size of those messages,
	// as grpc-go's own retry buffer (grpc.MaxRetryRPCBufferSize) does.
	DefaultMaxBufferedBytes = 256 << 10
)

// RetriesKey is the request header the client's interceptors send on
// every call that they may repeat (its value is the attempt limit), so
// that the server's interceptors mark the call as made by a caller that
// retries (see [ServerConfig]).
const RetriesKey = "unherd-retries"

// ErrInvalidConfig is wrapped by every error Validate and NewClient
// return.
var ErrInvalidConfig = errors.New("unherdgrpc: invalid config")

// Config configures a [Client]. The zero value is the safe default:
// retry's defaults (3 attempts, full jitter from 50 ms, a token-bucket
// budget per Client, a single attempt for calls made while serving a
// caller that retries), UNAVAILABLE retried, RESOURCE_EXHAUSTED retried
// from the throttled base, everything else returned at once, pushback
// honoured up to 30 s, no per-attempt timeout, streams retried until
// their response headers with up to 64 messages (256 KiB) buffered,
// and no hedging.
type Config struct {
	// Retry configures the retry loop, shared by every method of the
	// channel. Retry.AttemptTimeout (or Retry.Timeouts) bounds each
	// attempt inside the call's own deadline: its expiry, a
	// DEADLINE_EXCEEDED of the attempt and not of the call, is retried.
	// For a stream it bounds the wait for the first response message (an
	// expiry after the response headers ends the call: it is committed).
	// Retry.Observer receives the loop's events: an
	// unherdotel.Metrics.GRPCObserver there records gRFC A96's per-call
	// retry metrics.
	Retry retry.Config

	// Codes overrides the class of status codes: a code it names is
	// retried (Transient, Timeout, Throttled) or not (Permanent) as it
	// says; other codes keep [DefaultCodes]. The caller's own
	// cancellation and deadline are never retried, whatever it says.
	Codes map[codes.Code]failure.Class

	// Hedge, if set, hedges unary calls within each attempt: when a call
	// has had no answer for the hedger's delay, it is sent again (with
	// PreviousAttemptsKey) and the first success wins; a failed request
	// waits for the others, and only when all have failed does the last
	// failure go to the retry loop. Replies must be protocol buffer
	// messages (each request gets a fresh one, and the winner's is merged
	// into the caller's). Each hedge is a copy of the attempt: the retry
	// policy's guards admit it, its budget pays for it and both hear how
	// it ended (hedge.DoAttempt); the Hedger's own hedge.Config.Budget
	// plays no part. Only methods that HedgeMethod accepts are hedged.
	// Nil means no hedging.
	Hedge *hedge.Hedger

	// HedgeMethod reports whether a method (its full name,
	// "/package.Service/Method") may be hedged. Nil means every unary
	// method, when Hedge is set: hedge only methods safe to run twice.
	HedgeMethod func(fullMethod string) bool

	// Method reports whether a method may be retried at all. Nil means
	// every method: retry only what is safe to repeat (idempotent, or
	// carrying an idempotency key). A method it refuses passes through
	// the interceptors untouched.
	Method func(fullMethod string) bool

	// MaxBufferedMessages bounds the messages a stream keeps to send
	// again on a retry; a stream that sends more before its response
	// headers commits (is no longer retried). Zero means
	// DefaultMaxBufferedMessages.
	MaxBufferedMessages int

	// MaxBufferedBytes bounds the encoded size of those messages, as
	// grpc.MaxRetryRPCBufferSize does. Zero means DefaultMaxBufferedBytes.
	MaxBufferedBytes int

	// a6, set by the conversion of a hedgingPolicy with retryThrottling,
	// records each hedged request with the throttle.
	a6 *a6Accounting
}

// Validate reports settings that cannot work, naming the field.
func (c *Config) Validate() error {
	if c.MaxBufferedMessages < 0 {
		return fmt.Errorf("%w: MaxBufferedMessages %d is negative", ErrInvalidConfig, c.MaxBufferedMessages)
	}
	if c.MaxBufferedBytes < 0 {
		return fmt.Errorf("%w: MaxBufferedBytes %d is negative", ErrInvalidConfig, c.MaxBufferedBytes)
	}
	for code, cl := range c.Codes {
		if cl > failure.Permanent {
			return fmt.Errorf("%w: Codes[%v]: class %d is not a failure.Class constant", ErrInvalidConfig, code, cl)
		}
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("%w: Retry: %w", ErrInvalidConfig, err)
	}
	return nil
}

// Client holds the retry policy (and its budget) and the hedger of one
// dependency and makes its interceptors. It is safe for concurrent use;
// build one per dependency with NewClient and dial with its DialOptions.
//
// grpc-go has retries of its own (gRFC A6, enabled by a service config's
// retryPolicy), which would multiply with this Client's: 3 attempts over
// 3 attempts are 9. DialOptions disables them with grpc.WithDisableRetry
// (grpc-go's transparent retry of a request that never reached a server
// stays on: it sends nothing twice). Interceptors installed by hand,
// which cannot see whether the channel disabled retries, keep grpc-go
// from repeating an attempt all the same: every attempt is sent with
// grpc.MaxRetryRPCBufferSize(0), so grpc-go commits it when it sends its
// first message and never sends it again (which also ends grpc-go's
// transparent retry of such an attempt; and a stream that fails before
// it has sent anything may still be repeated by grpc-go under a service
// config's retryPolicy: dial such channels with DialOptions). Convert a
// service config's retryPolicy or hedgingPolicy with ParseMethodConfig
// and drop it from the channel.
type Client struct {
	policy     *retry.Policy
	codes      map[codes.Code]failure.Class
	hedger     *hedge.Hedger
	hedgeOK    func(string) bool
	methodOK   func(string) bool
	maxMsgs    int
	maxBytes   int
	retriesVal string // the RetriesKey value
	a6         *a6Accounting
}

// NewClient validates cfg and returns a Client built from it.
func NewClient(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := retry.New(cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c := &Client{
		policy:   p,
		hedger:   cfg.Hedge,
		hedgeOK:  cfg.HedgeMethod,
		methodOK: cfg.Method,
		maxMsgs:  cfg.MaxBufferedMessages,
		maxBytes: cfg.MaxBufferedBytes,
		a6:       cfg.a6,
	}
	if c.maxMsgs == 0 {
		c.maxMsgs = DefaultMaxBufferedMessages
	}
	if c.maxBytes == 0 {
		c.maxBytes = DefaultMaxBufferedBytes
	}
	if len(cfg.Codes) != 0 {
		c.codes = make(map[codes.Code]failure.Class, len(cfg.Codes))
		for k, v := range cfg.Codes {
			c.codes[k] = v
		}
	}
	c.retriesVal = strconv.Itoa(engine.AttemptLimit(context.Background(), p))
	return c, nil
}

// Policy returns the retry policy the Client's interceptors drive.
func (c *Client) Policy() *retry.Policy { return c.policy }

// DialOptions returns the options that install the Client on a channel:
// its unary and stream interceptors, and grpc.WithDisableRetry, so that
// grpc-go's own retries never run under them.
func (c *Client) DialOptions() []grpc.DialOption {
	return dialOptions(c.unary, c.stream)
}

// dialOptions installs the interceptors that unary and stream make, with
// no extra call option (the channel has grpc-go's retries disabled), on
// a channel without grpc-go's retries.
func dialOptions(unary func(grpc.CallOption) grpc.UnaryClientInterceptor, stream func(grpc.CallOption) grpc.StreamClientInterceptor) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDisableRetry(),
		grpc.WithChainUnaryInterceptor(unary(grpc.EmptyCallOption{})),
		grpc.WithChainStreamInterceptor(stream(grpc.EmptyCallOption{})),
	}
}

// UnaryClientInterceptor returns the unary interceptor alone, to install
// by hand; see [Client] for how it keeps grpc-go's retries off.
func (c *Client) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return c.unary(noChannelRetry)
}

// StreamClientInterceptor returns the stream interceptor alone; see
// UnaryClientInterceptor.
func (c *Client) StreamClientInterceptor() grpc.StreamClientInterceptor {
	return c.stream(noChannelRetry)
}

// noChannelRetry is added to the call options of every attempt that the
// interceptors installed by hand make: with no room
// to buffer the request for a retry, grpc-go commits the attempt as soon
// as it sends its first message, and never repeats it, whatever the
// channel's service config says. It is a value, so adding it allocates
// nothing.
var noChannelRetry grpc.CallOption = grpc.MaxRetryRPCBufferSize(0)

// callOptions returns opts with extra (noChannelRetry, or a no-op on a
// channel without grpc-go's retries) and, for each of tr and hdr that is
// not nil, a grpc.Trailer for tr and a grpc.Header for hdr.
func callOptions(opts []grpc.CallOption, extra grpc.CallOption, tr, hdr *metadata.MD) []grpc.CallOption {
	n := len(opts) + 1
	if tr != nil {
		n++
	}
	if hdr != nil {
		n++
	}
	out := make([]grpc.CallOption, len(opts), n)
	copy(out, opts)
	out = append(out, extra)
	if tr != nil {
		out = append(out, grpc.Trailer(tr))
	}
	if hdr != nil {
		out = append(out, grpc.Header(hdr))
	}
	return out
}

// outgoing returns the attempt's context: ctx with RetriesKey when the
// call may be repeated (retries says so), and PreviousAttemptsKey for an
// attempt after the first.
func (c *Client) outgoing(ctx context.Context, retries bool, previous int) context.Context {
	switch {
	case previous > 0:
		return metadata.AppendToOutgoingContext(ctx, RetriesKey, c.retriesVal, PreviousAttemptsKey, strconv.Itoa(previous))
	case retries:
		return metadata.AppendToOutgoingContext(ctx, RetriesKey, c.retriesVal)
	}
	return ctx
}

// repeats reports whether a call made with ctx may be sent more than
// once: it has retries left at this layer, or it is hedged.
func (c *Client) repeats(ctx context.Context, hedged bool) bool {
	return hedged || engine.AttemptLimit(ctx, c.policy) > 1
}

// unary returns the unary interceptor, which adds extra to every
// attempt's call options.
func (c *Client) unary(extra grpc.CallOption) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if c.methodOK != nil && !c.methodOK(method) {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		u := unaryCall{c: c, extra: extra, ctx: ctx, method: method, req: req, reply: reply, cc: cc, invoker: invoker, opts: opts}
		if c.hedger != nil && (c.hedgeOK == nil || c.hedgeOK(method)) {
			if err := u.hedged(); err != errNotHedged {
				return err
			}
		}
		u.retries = c.repeats(ctx, false)
		_, err := retry.DoValue(ctx, c.policy, u.attempt)
		if err != nil {
			return callError(ctx, err)
		}
		return nil
	}
}

// unaryCall is the state of one unary call across its attempts.
type unaryCall struct {
	c       *Client
	extra   grpc.CallOption
	ctx     context.Context
	method  string
	req     any
	reply   any
	cc      *grpc.ClientConn
	invoker grpc.UnaryInvoker
	opts    []grpc.CallOption
	sent    int  // requests sent so far
	retries bool // the call may be sent more than once: send RetriesKey
	tr      metadata.MD
	hdr     metadata.MD        // the attempt's response headers, nil if none came
	optBuf  [5]grpc.CallOption // the attempt's call options, when few
}

// attempt makes one attempt of the retry loop under actx, the attempt's
// context.
func (u *unaryCall) attempt(actx context.Context) (struct{}, error) {
	u.tr, u.hdr = nil, nil
	err := u.send(actx, u.sent, u.reply, &u.tr, &u.hdr)
	u.sent++
	if err == nil {
		return struct{}{}, nil
	}
	return struct{}{}, committed(u.c.judge(u.ctx, actx, err, u.tr), u.hdr)
}

// send sends the request for the attempt that has previous requests
// before it, filling reply, the trailer tr and the response headers hdr
// (left nil when the server answered with trailers only).
func (u *unaryCall) send(actx context.Context, previous int, reply any, tr, hdr *metadata.MD) error {
	var opts []grpc.CallOption
	if len(u.opts)+3 <= len(u.optBuf) && tr == &u.tr {
		// The unhedged call's attempts run one at a time: one buffer
		// serves them all.
		opts = append(append(u.optBuf[:0], u.opts...), u.extra, grpc.Trailer(tr), grpc.Header(hdr))
	} else {
		opts = callOptions(u.opts, u.extra, tr, hdr)
	}
	return u.invoker(u.c.outgoing(actx, u.retries, previous), u.method, u.req, reply, u.cc, opts...)
}
