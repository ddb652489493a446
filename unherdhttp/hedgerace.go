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
// Only a response the Transport would hand back may win: a fast 503 from
// an overloaded replica, or a hedge's refused connection, must not cancel
// a request that is about to succeed. So every request is judged where it
// runs (judgeResponse, judgeError), and the race runs under
// hedge.DoAttempt, as hedge.DoFirstSuccess races: a failure settles it only when no other request
// is running, and then the last failure's error is the attempt's (the
// retry loop judges it as any other attempt's). Failed requests'
// responses that do not go back are drained and closed.
type hedgeRace struct {
	c *call

	mu     sync.Mutex
	ended  bool           // hedge.DoAttempt returned: a late failure discards its own response
	failed []*StatusError // failed responses, to discard unless one goes back
}

// attemptHedged is attempt as a hedged call.
func (c *call) attemptHedged(ctx context.Context) (*http.Response, error) {
	r := &hedgeRace{c: c}
	resp, err := hedge.DoAttempt(ctx, c.t.hedger, c.t.policy, r.send, c.t.discardResponse)
	r.end(err)
	return resp, err
}

// send is one request of the race, the function hedge.DoAttempt
// runs for the primary and for every hedge. hctx is the request's hedge
// context; its end, when another request won, ends the request.
func (r *hedgeRace) send(hctx context.Context, _ int) (*http.Response, error) {
	c := r.c
	resp, err := c.send(c.req.Context(), hctx)
	if err == nil {
		return resp, nil
	}
	if se, hasResp := errtree.Find[*StatusError](err); hasResp {
		r.mu.Lock()
		if r.ended {
			r.mu.Unlock()
			se.discard(c.t.maxDrained)
			return nil, err
		}
		r.failed = append(r.failed, se)
		r.mu.Unlock()
	}
	return nil, err
}

// end runs when hedge.DoAttempt has returned err: every failed
// response but the one err carries (if any) is drained and closed, and so
// is that of any request that fails from now on.
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
