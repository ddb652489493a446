package unherdhttp

import (
	"context"
	"net/http"
	"sync"

	"github.com/unherd/unherd/hedge"
	"github.com/unherd/unherd/internal/errtree"
)

// hedgeRace is one hedged attempt: the race between its requests.
//
// hedge.Do settles a call on the first success and, unless the Hedger's
// Config.NonFatal says otherwise, on the first error, cancelling the other
// requests. Only a response the Transport would hand back may win: a fast
// 503 from an overloaded replica, or a hedge's refused connection, must not
// cancel a request that is about to succeed. So every request is judged
// where it runs (judgeResponse, judgeError), and a request that failed
// while another is still running holds its error back until the race is
// decided: by a success, which hedge.Do takes and which cancels the
// waiting request, or by the last request to fail, whose error hedge.Do
// returns (to the retry loop, which judges it as any other attempt's).
// Failed requests' responses that do not go back are drained and closed.
type hedgeRace struct {
	c *call

	mu      sync.Mutex
	running int            // requests sent and not yet judged
	won     bool           // a request succeeded and went to hedge.Do
	lost    bool           // the last request failed
	decided chan struct{}  // made by the first request to wait; closed by the last failure
	lastErr error          // the last failure's error, set before decided is closed
	ended   bool           // hedge.Do returned: a late failure discards its own response
	failed  []*StatusError // failed responses, to discard unless one goes back
}

// attemptHedged is attempt as a hedged call.
func (c *call) attemptHedged(ctx context.Context) (*http.Response, error) {
	r := &hedgeRace{c: c}
	resp, err := hedge.Do(ctx, c.t.hedger, r.send, c.t.discardResponse)
	r.end(err)
	return resp, err
}

// send is one request of the race, the function hedge.Do runs for the
// primary and for every hedge. hctx is the request's hedge context; its
// end, when another request won, ends the request.
func (r *hedgeRace) send(hctx context.Context, _ int) (*http.Response, error) {
	c := r.c
	r.mu.Lock()
	r.running++
	r.mu.Unlock()
	resp, err := c.send(c.req.Context(), hctx)
	if err == nil {
		resp, err = c.t.judgeResponse(c, resp)
	}
	r.mu.Lock()
	r.running--
	if err == nil {
		r.won = true
		r.mu.Unlock()
		return resp, nil
	}
	se, hasResp := errtree.Find[*StatusError](err)
	if r.ended {
		r.mu.Unlock()
		if hasResp {
			se.discard(c.t.maxDrained)
		}
		return nil, err
	}
	if hasResp {
		r.failed = append(r.failed, se)
	}
	switch {
	case r.won:
		// hedge.Do takes the success and then cancels this request: the
		// failure must not reach it first and settle the call.
		r.mu.Unlock()
		<-hctx.Done()
	case r.running == 0 || r.lost:
		// The last failure, which is the attempt's; or one after it, of a
		// hedge that a non-fatal last failure started.
		if !r.lost {
			r.lost = true
			r.lastErr = err
			if r.decided != nil {
				close(r.decided)
			}
		}
		r.mu.Unlock()
	default:
		if r.decided == nil {
			r.decided = make(chan struct{})
		}
		decided := r.decided
		r.mu.Unlock()
		select {
		case <-decided:
			// Every other request failed too. The waiting requests and the
			// last failure race into hedge.Do; all of them return the last
			// failure's error, so whichever arrives first, the attempt's
			// error is that one (this request's own response, kept in
			// failed, is discarded by end).
			return nil, r.lastErr
		case <-hctx.Done(): // another request won, or the caller gave up
		}
	}
	return nil, err
}

// end runs when hedge.Do has returned err: every failed response but the
// one err carries (if any) is drained and closed, and so is that of any
// request that fails from now on.
func (r *hedgeRace) end(err error) {
	keep, _ := errtree.Find[*StatusError](err)
	r.mu.Lock()
	r.ended = true
	failed := r.failed
	r.failed = nil
	r.mu.Unlock()
	for _, se := range failed {
		if se != keep {
			se.discard(r.c.t.maxDrained)
		}
	}
}
