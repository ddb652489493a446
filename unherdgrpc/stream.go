package unherdgrpc

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// stream returns the stream interceptor, which adds extra to every
// attempt's call options.
func (c *Client) stream(extra grpc.CallOption) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if c.methodOK != nil && !c.methodOK(method) {
			return streamer(ctx, desc, cc, method, opts...)
		}
		s := &clientStream{c: c, extra: extra, ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, opts: opts,
			call: engine.Begin(ctx, c.policy), retries: engine.AttemptLimit(ctx, c.policy) > 1}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.next(); err != nil {
			return nil, err
		}
		return s, nil
	}
}

// clientStream is a stream retried until its response headers or first
// message arrive (the commit point, A6): until then every message sent is kept, up
// to the Client's limits, and sent again on a new attempt after a
// retryable failure. Once committed it is the attempt's own stream.
// RecvMsg makes the retries, the wait between attempts included, so a
// SendMsg on another goroutine during that wait waits too, and goes to
// the new attempt.
type clientStream struct {
	c        *Client
	extra    grpc.CallOption
	ctx      context.Context // the caller's
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption
	retries  bool

	mu        sync.Mutex
	call      engine.Call
	att       engine.Attempt    // the current attempt: its timeout and latency
	cur       grpc.ClientStream // the current attempt
	actx      context.Context   // the current attempt's
	cancel    context.CancelCauseFunc
	committed bool
	reported  bool  // the call has heard how it ended
	closed    bool  // CloseSend was called
	sent      []any // messages to send again, until the commit
	size      int   // their encoded size, for protocol buffers
	attempts  int
	ended     error // how the call ended, when Header saw it end: RecvMsg returns it
}

// next starts the next attempt, waiting for it if the call's Decision
// asks, and sends it the buffered messages. It holds mu.
func (s *clientStream) next() error {
	for {
		if err := s.call.Admit(s.ctx); err != nil {
			return callError(s.ctx, err)
		}
		// The attempt's context lives until the stream ends, and its
		// timeout until the commit.
		sctx, cancel := context.WithCancelCause(s.ctx)
		s.att = engine.StartAttempt(sctx, s.c.policy)
		actx := s.att.Context()
		s.actx, s.cancel = actx, cancel
		cs, err := s.streamer(s.c.outgoing(actx, s.retries, s.attempts), s.desc, s.cc, s.method, callOptions(s.opts, s.extra, nil, nil)...)
		s.attempts++
		if err == nil {
			s.cur = cs
			for _, m := range s.sent {
				if cs.SendMsg(m) != nil {
					break // the attempt failed: RecvMsg reports how
				}
			}
			if s.closed {
				_ = cs.CloseSend()
			}
			return nil
		}
		if err := s.failed(actx, err, nil); err != nil {
			return err
		}
	}
}

// failed reports a failed attempt to the call and waits for the next one;
// a non-nil error ends the call. cs is the failed stream, if it started.
func (s *clientStream) failed(actx context.Context, err error, cs grpc.ClientStream) error {
	var tr metadata.MD
	if cs != nil {
		tr = cs.Trailer()
	}
	judged := s.endAttempt(s.c.judge(s.ctx, actx, err, tr))
	s.cancel(nil)
	if err := s.call.Failed(s.ctx, judged); err != nil {
		return callError(s.ctx, err)
	}
	return nil
}

// endAttempt ends the current attempt with err, the first time it is
// called for it (Attempt.End counts only its first call), and returns
// the error End made of err; later calls return err as it is. It holds
// mu.
func (s *clientStream) endAttempt(err error) error { return s.att.End(err) }

// commit ends the retries: the stream is the current attempt's from now
// on. It holds mu.
func (s *clientStream) commit() {
	if s.committed {
		return
	}
	s.committed = true
	s.att.Commit()
	s.sent, s.size = nil, 0
}

// SendMsg sends m on the current attempt and, until the commit, keeps it
// to send again. An attempt that has failed reports nil here (the message
// is kept for the next attempt); RecvMsg reports the failure, or retries.
func (s *clientStream) SendMsg(m any) error {
	s.mu.Lock()
	cs := s.cur
	if !s.committed {
		n := 0
		if pm, ok := m.(proto.Message); ok {
			n = proto.Size(pm)
		}
		if len(s.sent) >= s.c.maxMsgs || s.size+n > s.c.maxBytes {
			s.commit() // too much to keep: no more retries
		} else {
			s.sent = append(s.sent, m)
			s.size += n
		}
	}
	committed := s.committed
	s.mu.Unlock()
	err := cs.SendMsg(m)
	if err == io.EOF && !committed {
		return nil
	}
	return err
}

// RecvMsg receives the next message. Until the commit, a failed attempt
// is retried by the Client's policy, with the buffered messages sent
// again; the first message received, the stream's clean end or the
// response headers commit (an attempt that failed after its headers is
// not retried: A6 commits an RPC when its client receives them).
func (s *clientStream) RecvMsg(m any) error {
	s.mu.Lock()
	for {
		cs, committed := s.cur, s.committed
		if ended := s.ended; ended != nil {
			s.mu.Unlock()
			return ended
		}
		if committed {
			s.mu.Unlock()
			err := cs.RecvMsg(m)
			if err != nil || !s.reportedLocked() {
				s.endCommitted(err)
			}
			return err
		}
		s.mu.Unlock()
		err := cs.RecvMsg(m)
		s.mu.Lock()
		if s.cur != cs {
			continue // another goroutine's Header retried the attempt
		}
		if err == nil || err == io.EOF {
			s.commit()
			s.reported = true
			_ = s.endAttempt(nil)
			s.call.Succeeded()
			if err == io.EOF || !s.desc.ServerStreams {
				s.cancelLater()
			}
			s.mu.Unlock()
			return err
		}
		if again, ferr := s.retryFailed(cs, err); !again {
			s.mu.Unlock()
			return ferr
		}
	}
}

// retryFailed handles the failure err of the current attempt cs, under
// mu: it reports whether a new attempt has started; if not, the stream
// is committed and ferr is the error for the caller. An attempt that
// received response headers is committed (A6) and its failure goes to
// the caller as it is, as a committed stream's does.
func (s *clientStream) retryFailed(cs grpc.ClientStream, err error) (again bool, ferr error) {
	if hdr, _ := cs.Header(); hdr != nil {
		// The stream is done, so Header does not wait.
		s.commit()
		s.mu.Unlock()
		s.endCommitted(err)
		s.mu.Lock()
		return false, err
	}
	if ferr := s.failed(s.actx, err, cs); ferr != nil {
		s.commit()
		s.reported = true
		return false, ferr
	}
	if nerr := s.next(); nerr != nil {
		s.commit()
		s.reported = true
		return false, nerr
	}
	return true, nil
}

// reportedLocked reports, under mu, whether the call has heard how it
// ended.
func (s *clientStream) reportedLocked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reported
}

// endCommitted runs after a committed stream's RecvMsg: the call hears
// how a stream committed by the buffer limit ended (its first message,
// or its failure, which is no longer retried), so that budgets and guards
// count it; and a stream that has ended releases its attempt's context.
func (s *clientStream) endCommitted(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.reported {
		s.reported = true
		if err == nil || err == io.EOF {
			_ = s.endAttempt(nil)
			s.call.Succeeded()
		} else {
			var tr metadata.MD
			if s.cur != nil {
				tr = s.cur.Trailer()
			}
			// Committed: never retried, so Failed does not wait; a caller
			// that gave up cancels the call.
			judged := s.endAttempt(s.c.judge(s.ctx, s.actx, err, tr))
			_ = s.call.Failed(s.ctx, retry.Judge(judged, retry.Verdict{Final: true}))
		}
	}
	if err != nil {
		s.cancelLater()
	}
}

// cancelLater cancels the current attempt's context when the stream has
// ended; it holds mu.
func (s *clientStream) cancelLater() {
	if s.cancel != nil {
		s.cancel(nil)
	}
}

// current returns the current attempt's stream.
func (s *clientStream) current() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Header returns the response headers, and commits the stream when
// they arrive (A6). An attempt that ended without headers (a status in
// trailers only) is retried here as RecvMsg would retry it, and Header
// returns the next attempt's headers; when the retries end, it returns
// nil and nil, and RecvMsg returns the call's error, as grpc-go's
// ClientStream documents.
func (s *clientStream) Header() (metadata.MD, error) {
	s.mu.Lock()
	for {
		cs := s.cur
		if s.committed {
			s.mu.Unlock()
			return cs.Header()
		}
		s.mu.Unlock()
		md, err := cs.Header()
		s.mu.Lock()
		if s.cur != cs {
			continue // another goroutine's RecvMsg retried the attempt
		}
		if md != nil || err != nil {
			if md != nil {
				// The attempt has answered: its latency is known, and
				// the call hears how it ends from RecvMsg.
				s.commit()
				_ = s.endAttempt(nil)
			}
			s.mu.Unlock()
			return md, err
		}
		// No headers and no error: the attempt has ended, with its status
		// in the trailers. A failure is RecvMsg's to see; read it here.
		rerr := cs.RecvMsg(new(emptypb.Empty))
		if rerr == nil || rerr == io.EOF {
			s.mu.Unlock()
			return nil, nil // cannot happen: trailers only carry no message
		}
		if again, ferr := s.retryFailed(cs, rerr); !again {
			// As grpc-go's Header: nil and nil, and RecvMsg reports how
			// the call ended.
			s.ended = ferr
			s.mu.Unlock()
			return nil, nil
		}
	}
}

// Trailer returns the current attempt's trailer metadata.
func (s *clientStream) Trailer() metadata.MD { return s.current().Trailer() }

// CloseSend closes the sending side, and will on every later attempt.
func (s *clientStream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	cs := s.cur
	s.mu.Unlock()
	return cs.CloseSend()
}

// Context returns the current attempt's context.
func (s *clientStream) Context() context.Context { return s.current().Context() }
