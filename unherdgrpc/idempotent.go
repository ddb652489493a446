package unherdgrpc

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/unherd/unherd/idempotency"
)

// Metadata keys of idempotent calls.
const (
	// IdempotencyKey is the request header that carries a call's
	// idempotency key, the gRPC form of the Idempotency-Key header of the
	// IETF httpapi draft: a bare token or a quoted string.
	IdempotencyKey = "idempotency-key"
	// ReplayedKey is the response header set to "true" on a call answered
	// from a completed record.
	ReplayedKey = "idempotent-replayed"
)

// IdempotencyConfig makes unary calls that carry an IdempotencyKey run
// once, as package idempotency's middleware does for HTTP, through the
// same idempotency.Keeper. The first call with a key claims it in Store
// and runs the handler; its outcome, the reply or a status that ends the
// call (see below), is stored, and a later call with the same key and
// the same request gets it back (with ReplayedKey) without running the
// handler.
//
// A call whose key is still being served waits for the first, up to
// Wait (idempotency.DefaultWait) and within its own deadline, and gets
// its answer; past the wait it fails with UNAVAILABLE and a pushback
// (PushbackKey) of idempotency.InFlightRetryAfter, which unherd's client
// (DefaultCodes) and grpc-go's own retries (a retry policy listing
// UNAVAILABLE) retry after that delay. A key reused with a different
// request fails with FAILED_PRECONDITION; a missing key where Required
// is INVALID_ARGUMENT; a store that cannot be reached fails the call
// with UNAVAILABLE, and a full one (idempotency.ErrStoreFull) with
// RESOURCE_EXHAUSTED, nothing run.
//
// A handler that panics, or fails with a status that says the call may
// not have taken effect or may succeed later (UNAVAILABLE,
// RESOURCE_EXHAUSTED, ABORTED, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN,
// DATA_LOSS, CANCELLED), releases the key, so that a retry, if the
// client makes one, runs the handler again; any other status is stored
// and replayed. Of those, unherd's client retries UNAVAILABLE and
// RESOURCE_EXHAUSTED by default (Config.Codes adds others).
//
// Requests and replies must be protocol buffer messages. Only the reply
// or status is stored: header and trailer metadata the handler set are
// not replayed. The handler's context carries the claim's
// idempotency.Lease; a handler that completes the record itself
// (unherdpg's InTx) marks it with Lease.MarkCompleted, and the
// interceptor then leaves the record alone.
type IdempotencyConfig struct {
	// KeeperConfig holds the store and its times, as the HTTP middleware
	// has them: Store (idempotency.Memory for one process, or a shared
	// store such as unherdredis's or unherdpg's for a fleet; nil means a
	// new Memory store), TTL (how long a completed record is kept), Lease
	// (the in-flight lease of a claim in a shared store, renewed every
	// third of its length while the handler runs; a renewal that finds
	// the lease lost cancels the handler's context, and its outcome is
	// not stored), StoreTimeout (each store call's bound),
	// MaxResponseBody (the largest reply stored; a larger one completes
	// the record without it, and a replay fails with FAILED_PRECONDITION)
	// and Wait (how long a call whose key is in flight waits for the
	// first; a negative Wait answers UNAVAILABLE at once). Zero values mean the
	// idempotency package's defaults. StoreHeader has no effect: no
	// metadata is stored.
	idempotency.KeeperConfig

	// Principal returns who is calling, so that two callers' keys never
	// collide. Nil means every caller shares one key space, apart from
	// every principal's (idempotency.StoreKey).
	Principal func(ctx context.Context) string

	// Method reports whether a method honours keys. Nil means every unary
	// method.
	Method func(fullMethod string) bool

	// Required makes a call to a method that honours keys and carries none
	// an INVALID_ARGUMENT.
	Required bool

	// NewReply returns an empty reply message of a method, for a replay.
	// Nil means looking the method's output type up in the global
	// protocol buffer registry, where generated code registers it.
	NewReply func(fullMethod string) (proto.Message, error)
}

type idempotent struct {
	k         *idempotency.Keeper
	principal func(context.Context) string
	method    func(string) bool
	required  bool
	newReply  func(string) (proto.Message, error)
}

func newIdempotent(cfg IdempotencyConfig) (*idempotent, error) {
	k, err := idempotency.NewKeeper(cfg.KeeperConfig)
	if err != nil {
		return nil, fmt.Errorf("%w: Idempotency: %w", ErrInvalidConfig, err)
	}
	id := &idempotent{
		k:         k,
		principal: cfg.Principal,
		method:    cfg.Method,
		required:  cfg.Required,
		newReply:  cfg.NewReply,
	}
	if id.newReply == nil {
		id.newReply = registryReply
	}
	return id, nil
}

// serve runs a unary call under the idempotency rules.
func (id *idempotent) serve(ctx context.Context, md metadata.MD, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if id.method != nil && !id.method(info.FullMethod) {
		return handler(ctx, req)
	}
	vs := md[IdempotencyKey]
	if len(vs) == 0 {
		if id.required {
			return nil, status.Error(codes.InvalidArgument, "unherdgrpc: this method needs an "+IdempotencyKey+" header")
		}
		return handler(ctx, req)
	}
	key, err := idempotency.ParseKey(strings.Join(vs, ", "), true)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	pm, ok := req.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.Internal, "unherdgrpc: idempotency needs protocol buffer requests, not %T", req)
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(pm)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "unherdgrpc: fingerprinting the request: %v", err)
	}
	fp := fingerprint(info.FullMethod, body)
	var p string
	if id.principal != nil {
		p = id.principal(ctx)
		ctx = idempotency.WithPrincipal(ctx, p) // for a store that bounds each principal's share
	}
	key = idempotency.StoreKey(p, id.principal != nil, key)
	c, f, err := id.k.Claim(ctx, key, fp, nil)
	switch {
	case errors.Is(err, idempotency.ErrStoreFull):
		return nil, status.Errorf(codes.ResourceExhausted, "unherdgrpc: the idempotency store has no room for this key now; nothing was done: %v", err)
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "unherdgrpc: the idempotency store could not be reached; nothing was done: %v", err)
	case c.State != idempotency.Acquired && c.Fingerprint != fp:
		return nil, status.Error(codes.FailedPrecondition, "unherdgrpc: this idempotency key was used with a different request")
	case c.State == idempotency.InFlight:
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err() // the caller has gone
		}
		return nil, pushback(ctx, codes.Unavailable, "unherdgrpc: a call with this idempotency key is still being served; retry it after the pushback", idempotency.InFlightRetryAfter)
	case c.State == idempotency.Completed:
		return id.replay(ctx, info.FullMethod, c.Response)
	}
	return id.run(f, req, handler)
}

// fingerprint identifies what a call asks for: its method and request.
func fingerprint(method string, body []byte) idempotency.Fingerprint {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write(body)
	var fp idempotency.Fingerprint
	h.Sum(fp[:0])
	return fp
}

// retriedCode reports the statuses a client retries, or that say the
// call may not have run: a call ending with one releases its key.
func retriedCode(c codes.Code) bool {
	switch c {
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded,
		codes.Internal, codes.Unknown, codes.DataLoss, codes.Canceled:
		return true
	}
	return false
}

// run serves a call that holds its key's claim, under the flight.
func (id *idempotent) run(f *idempotency.Flight, req any, handler grpc.UnaryHandler) (resp any, err error) {
	returned := false
	defer func() {
		if !returned {
			f.Release() // a panic: let the retry run again
		}
	}()
	resp, err = handler(f, req)
	returned = true
	if err != nil {
		st := status.Convert(err)
		if retriedCode(st.Code()) {
			f.Release()
			return resp, err
		}
		b, merr := proto.Marshal(st.Proto())
		if merr != nil {
			f.Release()
			return resp, err
		}
		_ = f.Complete(&idempotency.Response{Status: int(st.Code()), Body: b})
		return resp, err
	}
	pm, ok := resp.(proto.Message)
	if !ok {
		f.Release()
		return resp, nil
	}
	b, merr := proto.Marshal(pm)
	if merr != nil {
		f.Release()
		return resp, nil
	}
	// A completion that fails leaves the record in flight until its
	// lease runs out: the client has its reply, and a retry waits, then
	// is asked to come back.
	_ = f.Complete(&idempotency.Response{Status: int(codes.OK), Body: b})
	return resp, nil
}

// replay answers a call from a completed record.
func (id *idempotent) replay(ctx context.Context, method string, r *idempotency.Response) (any, error) {
	if r.Omitted {
		return nil, status.Error(codes.FailedPrecondition, "unherdgrpc: the call with this idempotency key completed, but its reply was not stored")
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(ReplayedKey, "true"))
	if codes.Code(r.Status) != codes.OK {
		var sp spb.Status
		if err := proto.Unmarshal(r.Body, &sp); err != nil {
			return nil, status.Errorf(codes.Internal, "unherdgrpc: decoding the stored status: %v", err)
		}
		return nil, status.FromProto(&sp).Err()
	}
	reply, err := id.newReply(method)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "unherdgrpc: replaying %s: %v", method, err)
	}
	if err := proto.Unmarshal(r.Body, reply); err != nil {
		return nil, status.Errorf(codes.Internal, "unherdgrpc: decoding the stored reply: %v", err)
	}
	return reply, nil
}

// errNoReplyType: the registry does not know the method's output type.
var errNoReplyType = errors.New("unherdgrpc: method's reply type is not registered")

// registryReply returns an empty reply of a method ("/pkg.Service/Method")
// by its descriptor in the global registry.
func registryReply(fullMethod string) (proto.Message, error) {
	svc, m, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok {
		return nil, fmt.Errorf("%w: %q is not /service/method", errNoReplyType, fullMethod)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoReplyType, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a service", errNoReplyType, svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(m))
	if md == nil {
		return nil, fmt.Errorf("%w: %s has no method %s", errNoReplyType, svc, m)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoReplyType, err)
	}
	return mt.New().Interface(), nil
}
