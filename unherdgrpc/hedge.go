package unherdgrpc

import (
	"context"
	"errors"
	"sync/atomic"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/retry"
)

// errNotHedged says a call cannot be hedged: its reply is not a protocol
// buffer message, so concurrent requests cannot each have their own.
var errNotHedged = errors.New("unherdgrpc: reply is not a proto.Message")

// hedged runs a unary call whose attempts are hedged: each attempt of the
// retry loop is a race, under hedge.DoAttempt, between the primary
// and its hedges, each with a reply of its own; the winner's reply is
// merged into the caller's. It returns errNotHedged, having sent nothing,
// when the reply is not a proto.Message.
func (u *unaryCall) hedged() error {
	reply, ok := u.reply.(proto.Message)
	if !ok {
		return errNotHedged
	}
	u.retries = true
	h := &hedgedCall{u: u, proto: reply}
	won, err := retry.DoValue(u.ctx, u.c.policy, h.attempt)
	if err != nil {
		return callError(u.ctx, err)
	}
	proto.Reset(reply)
	proto.Merge(reply, won)
	return nil
}

// hedgedCall is the shared state of a hedged unary call.
type hedgedCall struct {
	u     *unaryCall
	proto proto.Message // the caller's reply, whose type each request gets anew
	sent  atomic.Int32  // requests sent so far, hedges included
}

// attempt is one attempt of the retry loop: a hedged race.
func (h *hedgedCall) attempt(actx context.Context) (proto.Message, error) {
	return hedge.DoAttempt(actx, h.u.c.hedger, h.u.c.policy, func(hctx context.Context, _ int) (proto.Message, error) {
		return h.send(actx, hctx)
	}, nil)
}

// send is one request of a race, judged where it runs, so that only a
// success wins and a fast failure of one replica does not cancel a
// request to another that may yet succeed. actx is the attempt's context
// and hctx the request's, which ends when another request wins.
func (h *hedgedCall) send(actx, hctx context.Context) (proto.Message, error) {
	previous := int(h.sent.Add(1)) - 1
	reply := h.proto.ProtoReflect().New().Interface()
	var tr, hdr metadata.MD
	err := h.u.send(hctx, previous, reply, &tr, &hdr)
	if err == nil {
		h.u.c.a6.request(nil, false)
		return reply, nil
	}
	p, hasP := parsePushback(tr)
	r, hasR := retryInfo(status.Convert(err))
	pushback, hasPushback := askedDelay(p, hasP, r, hasR)
	if hdr != nil || hctx.Err() == nil {
		// Not a request that lost the race or that the caller cancelled.
		h.u.c.a6.request(err, hasPushback && pushback < 0)
	}
	// A request that lost the race ends with CANCELLED; it is dropped by
	// DoAttempt. judge asks actx, not hctx, whether the attempt's own
	// timeout expired: hctx also ends when another request wins.
	judged := committed(h.u.c.judge(h.u.ctx, actx, err, tr), hdr)
	switch {
	case hdr != nil:
		// A6: a request whose response headers arrived commits the call;
		// its failure is the call's, and the other requests are cancelled.
		return nil, hedge.MarkFatal(judged)
	case hctx.Err() != nil:
		return nil, judged
	}
	// A6: the server's pushback steers the hedges to come: a valid one
	// delays the next hedge by that much, a negative or malformed one
	// stops them. A RetryInfo delay counts as a pushback (askedDelay).
	if hasPushback {
		return nil, hedge.WithPushback(judged, pushback)
	}
	return nil, judged
}
